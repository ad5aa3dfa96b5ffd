// Kernels, copies, memsets and synchronisations per device and stream, and
// scopes and framework operators per host thread, as a Chrome/Perfetto trace
// (<output_dir>/timeline.trace.json) that opens in ui.perfetto.dev. Written as
// events arrive, so memory stays flat and a run cut short still leaves a
// readable file; the file is created at the first event, so a process that
// does no GPU work leaves none. Its header says which process of a job it is
// ("distributedInfo", as Kineto writes it, for Holistic Trace Analysis) and
// how its clock maps to the wall clock ("pasta"), so `pasta report` can lay
// the processes of a job side by side. Names are escaped by nlohmann/json
// (in detail/timeline_impl.hpp: a unit that includes this header in a compiled
// build parses none of it) once each and cached; each line is then one fmt call (an operator's or a
// scope's begin and end, two an operator call, are put together by hand), its
// times written from integers (Micros), not formatted as floating point.
#pragma once

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/api.hpp>
#include <pasta/core/detail/demangle.hpp>
#include <pasta/core/detail/files.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/report.hpp>

namespace pasta::tools {

// A time in nanoseconds written as microseconds with three decimals ("12.345"), as
// fmt's {:.3f} of ns / 1e3 writes it, from integers: a floating-point format took
// most of an event's cost.
struct Micros {
  std::int64_t ns = 0;
  static constexpr std::size_t max_chars = 32;
  // Writes it at out (max_chars at most); returns the end.
  char* write(char* out) const {
    const std::uint64_t abs =
        ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
    if (ns < 0) *out++ = '-';
    out = std::to_chars(out, out + 24, abs / 1000).ptr;
    const auto frac = static_cast<unsigned>(abs % 1000);
    *out++ = '.';
    *out++ = static_cast<char>('0' + frac / 100);
    *out++ = static_cast<char>('0' + frac / 10 % 10);
    *out++ = static_cast<char>('0' + frac % 10);
    return out;
  }
};

}  // namespace pasta::tools

template <>
struct fmt::formatter<pasta::tools::Micros> {
  constexpr auto parse(fmt::format_parse_context& ctx) { return ctx.begin(); }
  template <class Context>
  auto format(pasta::tools::Micros m, Context& ctx) const {
    char buf[pasta::tools::Micros::max_chars];
    return std::copy(buf, m.write(buf), ctx.out());
  }
};

namespace pasta::tools {

class Timeline {
 public:
  static constexpr std::string_view name = "timeline";
  static constexpr int host_pid = 0;  // GPU d is process d + 1

  explicit Timeline(const Config& cfg)
      : path_(detail::join_path(cfg.output_dir, "timeline.trace.json")),
        dir_(cfg.output_dir),
        process_(cfg.process) {}
  ~Timeline() { finish(); }
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  void on(const DeviceInfo& e) {
    meta(pid(e.device), 0, "process_name", fmt::format("GPU {}: {}", e.device, name_of(e.name)));
  }
  void on(const KernelComplete& e) {
    if (!e.start_ns || e.end_ns < e.start_ns) return;
    line(
        R"j({{"name":{},"cat":"kernel","ph":"X","pid":{},"tid":{},"ts":{},"dur":{},)j"
        R"j("args":{{"correlation":{},"device":{},"stream":{},"grid":"({},{},{})","block":"({},{},{})",)j"
        R"j("shared_mem_bytes":{}}}}})j",
        quoted(e.name, true), pid(e.device), e.stream, us(e.start_ns),
        span(e.start_ns, e.end_ns), e.correlation, e.device, e.stream, e.grid.x, e.grid.y,
        e.grid.z, e.block.x, e.block.y, e.block.z, e.shared_mem_bytes);
    ++kernels_;
  }
  // A launch the host's launch callbacks saw (--launch-callbacks: a host thread and time) is
  // an instant on that thread, joined to its kernel by correlation: how long the kernel
  // waited to start (the job merge's launch delays and idle causes). Launches taken from
  // the device records (thread 0, the kernel's own start) say nothing more: left out.
  void on(const KernelLaunch& e) {
    if (e.thread == 0 || e.time_ns == 0) return;
    line(R"j({{"name":"launch","cat":"launch","ph":"i","pid":{},"tid":{},"ts":{},)j"
         R"j("args":{{"correlation":{}}}}})j",
         host_pid, e.thread, us(e.time_ns), e.correlation);
  }
  void on(const Memcpy& e) {
    if (!e.start_ns || e.end_ns < e.start_ns) return;
    line(R"j({{"name":"memcpy {} {}","cat":"memcpy","ph":"X","pid":{},"tid":{},"ts":{},)j"
         R"j("dur":{},"args":{{"bytes":{},"correlation":{}}}}})j",
         to_string(e.copy_kind), human_bytes(e.bytes), pid(e.device), e.stream, us(e.start_ns),
         span(e.start_ns, e.end_ns), e.bytes, e.correlation);
  }
  void on(const Memset& e) {
    if (!e.start_ns || e.end_ns < e.start_ns) return;
    line(R"j({{"name":"memset {}","cat":"memset","ph":"X","pid":{},"tid":{},"ts":{},)j"
         R"j("dur":{},"args":{{"bytes":{},"value":{}}}}})j",
         human_bytes(e.bytes), pid(e.device), e.stream, us(e.start_ns),
         span(e.start_ns, e.end_ns), e.bytes, e.value);
  }
  void on(const Synchronize& e) {
    if (!e.start_ns || e.end_ns < e.start_ns) return;
    line(
        R"j({{"name":"sync {}","cat":"sync","ph":"X","pid":{},"tid":{},"ts":{},"dur":{}}})j",
        to_string(e.sync_kind), pid(e.device), e.stream, us(e.start_ns),
        span(e.start_ns, e.end_ns));
  }
  void on(const ScopeBegin& e) { edge('B', e.name, e.thread, e.time_ns); }
  void on(const ScopeEnd& e) { edge('E', e.name, e.thread, e.time_ns); }
  // Framework operators (torch::Aten) nest under scopes on their thread.
  void on(const OpBegin& e) { edge('B', e.name, e.thread, e.time_ns, "op"); }
  void on(const OpEnd& e) { edge('E', e.name, e.thread, e.time_ns, "op"); }

  void flush() {
    if (file_) std::fflush(file_);
  }
  // Closes the file; pasta's readers also take one cut short (no closing brackets).
  void finish();

  void report(Report& out) const;

  std::uint64_t events() const { return events_; }
  const std::string& path() const { return path_; }

 private:
  static int pid(std::uint32_t device) { return static_cast<int>(device) + 1; }

  static std::string human_bytes(std::uint64_t b) {
    if (b >= (1u << 20)) return fmt::format("{:.1f} MB", b / 1048576.0);
    if (b >= (1u << 10)) return fmt::format("{:.1f} KB", b / 1024.0);
    return fmt::format("{} B", b);
  }

  // The JSON string for a name, escaped once; kernel names demangled.
  const std::string& quoted(NameId id, bool demangle) {
    if (id.value >= quoted_.size()) quoted_.resize(id.value + 1);
    std::string& s = quoted_[id.value];
    if (s.empty())
      s = json_string(demangle ? detail::demangle(name_of(id)) : std::string(name_of(id)));
    return s;
  }
  // `text` as a JSON string, quoted and escaped (invalid UTF-8 replaced).
  static std::string json_string(const std::string& text);

  // The time since the first event.
  Micros us(std::uint64_t ns) {
    if (!base_ns_) base_ns_ = ns;  // line() then writes this origin once
    return {static_cast<std::int64_t>(ns - base_ns_)};
  }
  static Micros span(std::uint64_t start_ns, std::uint64_t end_ns) {
    return {static_cast<std::int64_t>(end_ns - start_ns)};
  }

  // A scope's or an operator's begin or end, two for every operator call: the
  // line fmt would write, put together by hand (fmt parses its format string
  // at every call, which was most of this line's cost).
  void edge(char ph, NameId scope, std::uint32_t thread, std::uint64_t t,
            std::string_view cat = "scope") {
    if (!begin_line()) return;
    const Micros ts = us(t);
    buffer_ += std::string_view(R"j({"name":)j");
    buffer_ += quoted(scope, false);
    buffer_ += std::string_view(R"j(,"cat":")j");
    buffer_ += cat;
    buffer_ += std::string_view(R"j(","ph":")j");
    buffer_ += ph;
    buffer_ += std::string_view(R"j(","pid":)j");
    append_int(host_pid);
    buffer_ += std::string_view(R"j(,"tid":)j");
    append_int(thread);
    buffer_ += std::string_view(R"j(,"ts":)j");
    char digits[Micros::max_chars];
    buffer_.append(digits, ts.write(digits));
    buffer_ += '}';
    commit();
  }
  template <class I>
  void append_int(I v) {
    char digits[24];
    buffer_.append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
  }
  void meta(int pid, std::uint64_t tid, const char* what, const std::string& value) {
    line(R"j({{"name":"{}","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})j", what, pid, tid,
         json_string(value));
  }
  // Creates the file at the first event: the header, then the events.
  bool open();
  // The trace's clock at ts = 0 is set by the first event; the header keeps
  // one reading of that clock and of the wall clock taken together, which is
  // how processes of a job on different hosts are lined up.
  std::string header() const;
  template <class... A>
  void line(fmt::format_string<A...> f, A&&... args) {
    if (!begin_line()) return;
    fmt::format_to(std::back_inserter(buffer_), f, std::forward<A>(args)...);
    commit();
  }
  // A line can be written (the file opened at the first): buffer_ emptied for it.
  bool begin_line() {
    if (!file_ && (opened_ || !open())) return false;
    buffer_.clear();
    return true;
  }
  // Writes the line in buffer_ (and, after the first timed one, the clock's origin).
  void commit() {
    buffer_ += ",\n";
    if (base_ns_ && !origin_written_) {
      // The clock reading at ts = 0, for lining up the processes of a job.
      fmt::format_to(
          std::back_inserter(buffer_),
          R"j({{"name":"pasta_origin","ph":"M","pid":{},"tid":0,"args":{{"clock_ns":{}}}}},)j"
          "\n",
          host_pid, base_ns_);
      origin_written_ = true;
    }
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
      fail(std::strerror(errno));
      std::fclose(file_);
      file_ = nullptr;
      return;
    }
    ++events_;
  }
  void fail(const std::string& why);

  std::string path_, dir_, error_;
  ProcessIdentity process_;
  std::FILE* file_ = nullptr;
  bool opened_ = false;  // the file was created (or creating it failed)
  bool origin_written_ = false;
  std::uint64_t base_ns_ = 0, events_ = 0, kernels_ = 0;
  std::vector<std::string> quoted_;  // JSON-escaped names, by NameId
  std::string buffer_;
};

}  // namespace pasta::tools

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/tools/detail/timeline_impl.hpp>
#endif
