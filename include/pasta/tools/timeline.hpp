// Kernels, copies, memsets and synchronisations per device and stream, and
// scopes and framework operators per host thread, as a Chrome/Perfetto trace (JSON array format,
// <output_dir>/timeline.trace.json) that opens in ui.perfetto.dev. Written as
// events arrive, so memory stays flat and a run cut short still leaves a
// readable file. Names are escaped by nlohmann/json once each and cached;
// each line is then one fmt call (about 0.3 us an event).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/demangle.hpp>
#include <pasta/core/detail/files.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/report.hpp>

namespace pasta::tools {

class Timeline {
 public:
  static constexpr std::string_view name = "timeline";
  static constexpr int host_pid = 0;  // GPU d is process d + 1

  explicit Timeline(const Config& cfg)
      : path_(detail::join_path(cfg.output_dir, "timeline.trace.json")) {
    if (const auto why = detail::make_dirs(cfg.output_dir); !why.empty()) {
      fail(why);
      return;
    }
    file_ = std::fopen(path_.c_str(), "w");
    if (!file_) {
      fail(std::strerror(errno));
      return;
    }
    // Large writes: a system call per 4 KiB costs the traced program time
    // on virtual machines; one per MiB does not.
    std::setvbuf(file_, nullptr, _IOFBF, 1u << 20);
    std::fputs("[\n", file_);
    meta(host_pid, 0, "process_name", "Host");
  }
  ~Timeline() { finish(); }
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  void on(const DeviceInfo& e) {
    meta(pid(e.device), 0, "process_name", fmt::format("GPU {}: {}", e.device, name_of(e.name)));
  }
  void on(const KernelComplete& e) {
    if (!e.start_ns || e.end_ns < e.start_ns) return;
    line(
        R"j({{"name":{},"cat":"kernel","ph":"X","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},)j"
        R"j("args":{{"correlation":{},"grid":"({},{},{})","block":"({},{},{})","shared_mem_bytes":{}}}}})j",
        quoted(e.name, true), pid(e.device), e.stream, us(e.start_ns),
        (e.end_ns - e.start_ns) / 1e3, e.correlation, e.grid.x, e.grid.y, e.grid.z, e.block.x,
        e.block.y, e.block.z, e.shared_mem_bytes);
    ++kernels_;
  }
  void on(const Memcpy& e) {
    if (!e.start_ns || e.end_ns < e.start_ns) return;
    line(R"j({{"name":"memcpy {} {}","cat":"memcpy","ph":"X","pid":{},"tid":{},"ts":{:.3f},)j"
         R"j("dur":{:.3f},"args":{{"bytes":{},"correlation":{}}}}})j",
         to_string(e.copy_kind), human_bytes(e.bytes), pid(e.device), e.stream, us(e.start_ns),
         (e.end_ns - e.start_ns) / 1e3, e.bytes, e.correlation);
  }
  void on(const Memset& e) {
    if (!e.start_ns || e.end_ns < e.start_ns) return;
    line(R"j({{"name":"memset {}","cat":"memset","ph":"X","pid":{},"tid":{},"ts":{:.3f},)j"
         R"j("dur":{:.3f},"args":{{"bytes":{},"value":{}}}}})j",
         human_bytes(e.bytes), pid(e.device), e.stream, us(e.start_ns),
         (e.end_ns - e.start_ns) / 1e3, e.bytes, e.value);
  }
  void on(const Synchronize& e) {
    if (!e.start_ns || e.end_ns < e.start_ns) return;
    line(
        R"j({{"name":"sync {}","cat":"sync","ph":"X","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f}}})j",
        to_string(e.sync_kind), pid(e.device), e.stream, us(e.start_ns),
        (e.end_ns - e.start_ns) / 1e3);
  }
  void on(const ScopeBegin& e) { edge('B', e.name, e.thread, e.time_ns); }
  void on(const ScopeEnd& e) { edge('E', e.name, e.thread, e.time_ns); }
  // Framework operators (torch::Aten) nest under scopes on their thread.
  void on(const OpBegin& e) { edge('B', e.name, e.thread, e.time_ns, "op"); }
  void on(const OpEnd& e) { edge('E', e.name, e.thread, e.time_ns, "op"); }

  void flush() {
    if (file_) std::fflush(file_);
  }
  // Closes the array; a trace without the closing bracket still loads.
  void finish() {
    if (!file_) return;
    std::fputs("{}]\n", file_);
    if (std::fclose(file_) != 0) fail("close failed");
    file_ = nullptr;
  }

  void report(Report& out) const {
    out.summary("trace", path_);
    out.summary("events", events_);
    out.summary("kernels", kernels_);
    if (!error_.empty()) out.summary("error", error_);
    if (error_.empty()) {
      out.attach(path_);
      out.note("open it in https://ui.perfetto.dev (Open trace file) or chrome://tracing");
    }
  }

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
      s = nlohmann::json(demangle ? detail::demangle(name_of(id)) : std::string(name_of(id)))
              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return s;
  }

  // Microseconds since the first event, keeping nanoseconds exact in a double.
  double us(std::uint64_t ns) {
    if (!base_ns_) base_ns_ = ns;
    return static_cast<double>(static_cast<std::int64_t>(ns - base_ns_)) / 1e3;
  }

  void edge(char ph, NameId scope, std::uint32_t thread, std::uint64_t t,
            std::string_view cat = "scope") {
    line(R"j({{"name":{},"cat":"{}","ph":"{}","pid":{},"tid":{},"ts":{:.3f}}})j",
         quoted(scope, false), cat, ph, host_pid, thread, us(t));
  }
  void meta(int pid, std::uint64_t tid, const char* what, const std::string& value) {
    line(R"j({{"name":"{}","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})j", what, pid, tid,
         nlohmann::json(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  template <class... A>
  void line(fmt::format_string<A...> f, A&&... args) {
    if (!file_) return;
    buffer_.clear();
    fmt::format_to(std::back_inserter(buffer_), f, std::forward<A>(args)...);
    buffer_ += ",\n";
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
      fail(std::strerror(errno));
      std::fclose(file_);
      file_ = nullptr;
      return;
    }
    ++events_;
  }
  void fail(const std::string& why) {
    error_ = fmt::format("cannot write {}: {}", path_, why);
    detail::log_once("timeline:" + path_, error_);
  }

  std::string path_, error_;
  std::FILE* file_ = nullptr;
  std::uint64_t base_ns_ = 0, events_ = 0, kernels_ = 0;
  std::vector<std::string> quoted_;  // JSON-escaped names, by NameId
  std::string buffer_;
};

}  // namespace pasta::tools
