// Helpers shared by the tests: scratch directories, captured log lines, a
// tool that keeps every event it sees, and small event builders.
#pragma once

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/detail/files.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/report.hpp>

namespace pasta::test {

// A fresh directory under $TMPDIR, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/pasta-test-XXXXXX";
    if (!::mkdtemp(pattern.data())) FAIL("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return detail::join_path(path_, name); }

 private:
  std::string path_;
};

// Collects pasta's log lines instead of printing them, while alive.
class CapturedLog {
 public:
  CapturedLog() {
    detail::set_log_capture(
        [](std::string_view line, void* self) {
          static_cast<CapturedLog*>(self)->lines_.emplace_back(line);
        },
        this);
  }
  ~CapturedLog() { detail::set_log_capture(nullptr, nullptr); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
  const std::vector<std::string>& lines() const { return lines_; }
  bool contains(std::string_view text) const {
    for (const auto& l : lines_)
      if (l.find(text) != std::string::npos) return true;
    return false;
  }

 private:
  std::vector<std::string> lines_;
};

// Sets environment variables while alive (nullptr: unset), then puts back
// what was there.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name);
      saved_.push_back({name, old != nullptr, old ? old : ""});
      if (value)
        ::setenv(name, value, 1);
      else
        ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (const auto& s : saved_)
      if (s.had)
        ::setenv(s.name.c_str(), s.value.c_str(), 1);
      else
        ::unsetenv(s.name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  struct Saved {
    std::string name;
    bool had;
    std::string value;
  };
  std::vector<Saved> saved_;
};

// A configuration for tests: reports into `dir`, nothing printed, and no
// PASTA_* variable from the environment.
inline Config quiet(const TempDir& dir) {
  Config c;
  c.output_dir = dir.path();
  c.print = PrintTo::none;
  c.read_env = false;
  return c;
}

using AnyEvent = std::variant<DeviceInfo, KernelLaunch, KernelComplete, MemAlloc, MemFree, Memcpy,
                              Memset, Synchronize, ModuleLoad, MemAccess, AccessHistogram,
                              ScopeBegin, ScopeEnd, OpBegin, OpEnd, TensorAlloc, TensorFree,
                              KernelCounters, StallSample, TensorView, FusedKernel, PcAccessCount,
                              ModuleCall>;

// A tool that keeps every event, in order.
struct Collect {
  static constexpr std::string_view name = "collect";
  template <Event E>
  void on(const E& e) {
    events.emplace_back(e);
  }
  void report(Report& out) const { out.summary("events", events.size()); }
  template <class E>
  std::vector<E> of() const {
    std::vector<E> out;
    for (const auto& e : events)
      if (auto* p = std::get_if<E>(&e)) out.push_back(*p);
    return out;
  }
  std::vector<AnyEvent> events;
};

// A report's table by name; fails the test if there is none.
inline const Table& table(const Report& r, std::string_view name) {
  for (const Table& t : r.tables())
    if (t.name() == name) return t;
  FAIL("no table " << name);
  return r.tables().front();
}

// One cell of a table, as the type it must hold (std::get throws otherwise).
template <class T>
T cell(const Table& t, std::size_t row, std::size_t column) {
  return std::get<T>(t.rows().at(row).at(column));
}

// One cell of a table by column name, as text (integers in decimal, doubles
// as fmt prints them, nothing as ""); fails the test for an unknown column.
inline std::string text(const Table& t, std::size_t row, std::string_view column) {
  const auto& cols = t.columns();
  const auto at = std::find(cols.begin(), cols.end(), column);
  if (at == cols.end()) {
    FAIL("no column " << column << " in table " << t.name());
    return {};
  }
  const Cell& c = t.rows().at(row).at(static_cast<std::size_t>(at - cols.begin()));
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>)
          return "";
        else if constexpr (std::is_same_v<V, std::string>)
          return v;
        else
          return fmt::format("{}", v);
      },
      c);
}

// The report a tool writes.
template <class T>
Report report_of(const T& tool) {
  Report r(std::string(T::name));
  tool.report(r);
  return r;
}

// A report's summary values by key.
inline std::map<std::string, Cell> summary(const Report& r) {
  std::map<std::string, Cell> s;
  for (const auto& [k, v] : r.summary()) s[k] = v;
  return s;
}

inline KernelLaunch launch(std::uint64_t correlation, std::string_view kernel,
                           Dim3 grid = {1, 1, 1}, Dim3 block = {32, 1, 1}) {
  return {.correlation = correlation,
          .stream = 7,
          .name = intern(kernel),
          .grid = grid,
          .block = block};
}

inline KernelComplete complete(std::uint64_t correlation, std::uint64_t start_ns,
                               std::uint64_t end_ns) {
  return {.correlation = correlation, .start_ns = start_ns, .end_ns = end_ns};
}

}  // namespace pasta::test
