#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <pasta/core/detail/self_time.hpp>
#include <pasta/pasta.hpp>
#include <pasta/trace.hpp>

#include "../support.hpp"

using namespace pasta;

namespace {

std::vector<std::string> calls;  // what the test policies below did, in order

struct LaunchCounter {
  static constexpr std::string_view name = "launch_counter";
  int launches = 0;
  void on(const KernelLaunch&) {
    ++launches;
    calls.push_back("counter");
  }
  void report(Report& out) const { out.summary("launches", launches); }
};

struct AllocWatcher {
  static constexpr std::string_view name = "alloc_watcher";
  explicit AllocWatcher(const Config& c) : top(c.top) {}
  std::size_t top;
  int allocs = 0, launches = 0;
  void on(const MemAlloc&) { ++allocs; }
  void on(const KernelLaunch&) {
    ++launches;
    calls.push_back("watcher");
  }
  void report(Report& out) const { out.summary("allocs", allocs); }
};

struct Thrower {
  static constexpr std::string_view name = "thrower";
  int seen = 0;
  void on(const KernelLaunch& e) {
    ++seen;
    if (e.correlation == 2) throw std::runtime_error("boom");
  }
  void report(Report&) const {}
};

template <int N>
struct Logger {
  static constexpr std::string_view name = "logger";
  template <class Sink>
  void start(Sink&) {
    calls.push_back("start " + std::to_string(N));
  }
  void stop() { calls.push_back("stop " + std::to_string(N)); }
  void flush() { calls.push_back("flush " + std::to_string(N)); }
};

// A handler with a report of its own (as nv::Sanitizer has).
struct ReportingHandler : Direct {
  static constexpr std::string_view name = "reporting_handler";
  void report(Report& r) const { r.summary("launches instrumented", 3); }
};

}  // namespace

// --- composition, checked at compile time -----------------------------------

using CountOnly = Profiler<Direct, proc::Cpu, LaunchCounter>;
static_assert(CountOnly::wants<KernelLaunch>());
static_assert(!CountOnly::wants<KernelComplete>());
static_assert(!CountOnly::wants<MemAccess>(), "no memory tool: no memory events");
static_assert(!CountOnly::wants<MemAlloc>());

using Hotness = Profiler<Direct, proc::Cpu, tools::MemHotness>;
static_assert(Hotness::wants<MemAccess>() && Hotness::wants<AccessHistogram>());
static_assert(Hotness::wants<MemAlloc>() && Hotness::wants<MemFree>());
static_assert(!Hotness::wants<KernelComplete>());
static_assert(Hotness::wants<KernelLaunch>(), "kernel selection needs launches");

using Freq = Profiler<Direct, proc::Cpu, tools::KernelFreq>;
static_assert(Freq::wants<KernelLaunch>() && Freq::wants<KernelComplete>());
static_assert(!Freq::wants<MemAlloc>() && !Freq::wants<ScopeBegin>());

// Events on request (kernel replay, PC sampling) are turned on only by a tool
// that names them, never by one that takes every event.
struct CounterReader {
  static constexpr std::string_view name = "counter_reader";
  std::vector<double> flops;
  void on(const KernelCounters& e) { flops.push_back(e.flops); }
  void report(Report&) const {}
};
using Counting = Profiler<Direct, proc::Cpu, tools::EventCount, tools::Record>;
static_assert(Counting::wants<KernelLaunch>() && Counting::wants<TensorAlloc>());
static_assert(!Counting::wants<TensorView>(), "nor reading every operator's inputs");
static_assert(!Counting::wants<KernelCounters>(), "EventCount and Record must not start replay");
static_assert(!Counting::wants<StallSample>(), "nor PC sampling");
using Reading = Profiler<Direct, proc::Cpu, tools::EventCount, CounterReader>;
static_assert(Reading::wants<KernelCounters>() && !Reading::wants<StallSample>());
static_assert(on_request<KernelCounters> && on_request<StallSample> && on_request<TensorView> &&
              !on_request<KernelLaunch>);

static_assert(Tool<tools::KernelFreq> && Tool<tools::MemHotness> && Tool<tools::Record>);
static_assert(Tool<tools::EventCount> && Tool<tools::ScopeTime>);
static_assert(Processor<proc::Cpu>);
static_assert(Handler<Direct> && Handler<Replay> && Handler<Handlers<Direct, Replay>>);

struct NoReport {
  static constexpr std::string_view name = "x";
  void on(const KernelLaunch&) {}
};
struct NoEvents {
  static constexpr std::string_view name = "x";
  void on(int) {}
  void report(Report&) const {}
};
static_assert(!Tool<NoReport> && !ToolWritesReport<NoReport>);
static_assert(!Tool<NoEvents> && !ToolHandlesSomeEvent<NoEvents>);

// --- dispatch -----------------------------------------------------------------

TEST_CASE("events reach every tool that has an overload for them, in the order named") {
  test::TempDir dir;
  calls.clear();
  Profiler<Direct, proc::Cpu, LaunchCounter, AllocWatcher> prof(test::quiet(dir));
  prof.emit(test::launch(1, "k"));
  prof.emit(MemAlloc{.address = 0x1000, .bytes = 64});
  prof.emit(test::launch(2, "k"));
  CHECK(prof.tool<LaunchCounter>().launches == 2);
  CHECK(prof.tool<AllocWatcher>().launches == 2);
  CHECK(prof.tool<AllocWatcher>().allocs == 1);
  CHECK(calls == std::vector<std::string>{"counter", "watcher", "counter", "watcher"});
}

TEST_CASE("an event on request reaches a tool taking every event once another tool asked for it") {
  test::TempDir dir;
  Profiler<Direct, proc::Cpu, tools::EventCount, CounterReader> prof(test::quiet(dir));
  prof.emit(KernelCounters{.correlation = 7, .flops = 2048});
  prof.emit(KernelCounters{.correlation = 8, .flops = 4096});
  CHECK(prof.tool<CounterReader>().flops == std::vector<double>{2048, 4096});
  CHECK(prof.tool<tools::EventCount>().count(EventKind::kernel_counters) == 2);
}

TEST_CASE("tools that take a Config get the profiler's, after the environment") {
  test::TempDir dir;
  Config c = test::quiet(dir);
  c.top = 7;
  Profiler<Direct, proc::Cpu, AllocWatcher> prof(c);
  CHECK(prof.tool<AllocWatcher>().top == 7);
  CHECK(prof.config().top == 7);
}

TEST_CASE("a tool that throws is reported once and the program goes on") {
  test::TempDir dir;
  test::CapturedLog log;
  Profiler<Direct, proc::Cpu, Thrower, LaunchCounter> prof(test::quiet(dir));
  for (std::uint64_t i = 1; i <= 3; ++i) prof.emit(test::launch(i, "k"));
  prof.emit(test::launch(2, "k"));
  CHECK(prof.tool<Thrower>().seen == 4);
  // The event that failed in Thrower did not reach the tools after it.
  CHECK(prof.tool<LaunchCounter>().launches == 2);
  REQUIRE(log.lines().size() == 1);
  CHECK(log.lines()[0] == "an analysis failed and skipped an event: boom");
}

namespace {
Profiler<Direct, proc::Cpu, LaunchCounter>* reentry_target = nullptr;
struct Reenter {
  static constexpr std::string_view name = "reenter";
  void on(const KernelLaunch&) { reentry_target->emit(test::launch(99, "inner")); }
  void report(Report&) const {}
};
}  // namespace

TEST_CASE("an event raised from inside dispatch is dropped and counted, not deadlocked") {
  test::TempDir dir;
  Profiler<Direct, proc::Cpu, LaunchCounter> target(test::quiet(dir));
  reentry_target = &target;
  Profiler<Direct, proc::Cpu, Reenter> outer(test::quiet(dir));
  test::CapturedLog log;
  outer.emit(test::launch(1, "outer"));
  outer.emit(test::launch(2, "outer"));
  CHECK(target.tool<LaunchCounter>().launches == 0);
  target.flush();  // the count is written with the reports
  CHECK(log.contains("2 events raised by pasta's own device work were not analysed"));
}

TEST_CASE("several handlers start in order and stop in reverse") {
  test::TempDir dir;
  calls.clear();
  {
    Profiler<Handlers<Logger<1>, Logger<2>>, proc::Cpu, LaunchCounter> prof(test::quiet(dir));
    prof.flush();
  }
  CHECK(calls ==
        std::vector<std::string>{"start 1", "start 2", "flush 1", "flush 2", "stop 2", "stop 1"});
}

TEST_CASE("a handler's own report is written alone and among several handlers") {
  test::TempDir alone, among;
  {
    Profiler<ReportingHandler, proc::Cpu, LaunchCounter> prof(test::quiet(alone));
    prof.emit(test::launch(1, "k"));
  }
  {
    Profiler<Handlers<Logger<1>, ReportingHandler>, proc::Cpu, LaunchCounter> prof(
        test::quiet(among));
    prof.emit(test::launch(1, "k"));
  }
  for (const test::TempDir* d : {&alone, &among}) {
    CHECK(detail::read_file(d->file("reporting_handler.txt")).find("launches instrumented: 3") !=
          std::string::npos);
    CHECK(
        detail::read_file(d->file("reporting_handler.json")).find("\"launches instrumented\": 3") !=
        std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(among.file("handlers.json")));
}

TEST_CASE("flush and destruction write every tool's report, processor included") {
  test::TempDir dir;
  {
    Profiler<Direct, proc::Cpu, LaunchCounter> prof(test::quiet(dir));
    prof.emit(test::launch(1, "k"));
    prof.flush();
    // text and JSON for the processor and the tool; neither has a table for CSV
    CHECK(prof.files().size() == 4);
    CHECK(detail::read_file(dir.file("launch_counter.txt")).find("launches: 1") !=
          std::string::npos);
    prof.emit(test::launch(2, "k"));
  }
  CHECK(detail::read_file(dir.file("launch_counter.txt")).find("launches: 2") != std::string::npos);
  CHECK(detail::read_file(dir.file("correlation.txt")).find("kernel launches seen: 2") !=
        std::string::npos);
}

TEST_CASE("a bad environment variable gives one line and the profiler still works") {
  test::TempDir dir;
  test::CapturedLog log;
  ::setenv("PASTA_TOP", "many", 1);
  ::setenv("PASTA_OUTPUT_DIR", dir.path().c_str(), 1);
  ::setenv("PASTA_PRINT", "none", 1);
  {
    Profiler<Direct, proc::Cpu, LaunchCounter> prof;
    prof.emit(test::launch(1, "k"));
    CHECK(prof.config().top == 20);
    CHECK(prof.config().output_dir == dir.path());
    CHECK(prof.tool<LaunchCounter>().launches == 1);
  }
  ::unsetenv("PASTA_TOP");
  ::unsetenv("PASTA_OUTPUT_DIR");
  ::unsetenv("PASTA_PRINT");
  REQUIRE(log.lines().size() == 1);  // PASTA_PRINT=none: no "reports in" line either
  CHECK(log.lines()[0] ==
        "PASTA_TOP=\"many\" is not accepted: expected a whole number >= 1; using 20");
}

TEST_CASE("a misspelt PASTA_ variable is named once") {
  test::TempDir dir;
  test::CapturedLog log;
  ::setenv("PASTA_OUTPUTDIR", "x", 1);
  Config c = test::quiet(dir);
  c.read_env = true;
  { Profiler<Direct, proc::Cpu, LaunchCounter> prof(c); }
  ::unsetenv("PASTA_OUTPUTDIR");
  REQUIRE(log.lines().size() == 1);
  CHECK(
      log.lines()[0].starts_with("PASTA_OUTPUTDIR is not a pasta variable; ignored (known: "
                                 "PASTA_OUTPUT_DIR, PASTA_KERNEL_FILTER,"));
}

TEST_CASE("a kernel filter set in code that does not compile is reported and dropped") {
  test::TempDir dir;
  test::CapturedLog log;
  Config c = test::quiet(dir);
  c.kernel_filter = "[";
  Profiler<Direct, proc::Cpu, LaunchCounter> prof(c);
  prof.emit(test::launch(1, "k"));
  CHECK(prof.tool<LaunchCounter>().launches == 1);
  REQUIRE(log.lines().size() == 1);
  CHECK(
      log.lines()[0].starts_with("kernel filter \"[\" is not a POSIX extended regular expression"));
}

// --- PASTA_TOOLS: a subset of the compiled-in tools -----------------------------

TEST_CASE("PASTA_TOOLS runs only the tools it names: the others see nothing and write nothing") {
  test::TempDir dir;
  test::CapturedLog log;
  Config c = test::quiet(dir);
  c.tools = {"alloc_watcher"};
  calls.clear();
  {
    Profiler<Direct, proc::Cpu, LaunchCounter, AllocWatcher> prof(c);
    static_assert(decltype(prof)::tool_names[0] == "launch_counter");
    CHECK(!prof.running<LaunchCounter>());
    CHECK(prof.running<AllocWatcher>());
    prof.emit(test::launch(1, "k"));
    prof.emit(MemAlloc{.address = 0x1000, .bytes = 64});
    CHECK(prof.tool<AllocWatcher>().launches == 1);
    CHECK(prof.tool<AllocWatcher>().allocs == 1);
    CHECK_THROWS_WITH_AS(prof.tool<LaunchCounter>(),
                         "pasta: tool launch_counter is not running (PASTA_TOOLS)",
                         std::logic_error);
  }
  CHECK(calls == std::vector<std::string>{"watcher"});
  CHECK(std::filesystem::exists(dir.file("alloc_watcher.txt")));
  CHECK(!std::filesystem::exists(dir.file("launch_counter.txt")));
  CHECK(!std::filesystem::exists(dir.file("launch_counter.json")));
  CHECK(log.lines().empty());
}

TEST_CASE("PASTA_TOOLS naming a tool the profiler lacks: one line, and every tool runs") {
  test::TempDir dir;
  test::CapturedLog log;
  ::setenv("PASTA_TOOLS", "launch_counter,kernel_frq", 1);
  Config c = test::quiet(dir);
  c.read_env = true;
  {
    Profiler<Direct, proc::Cpu, LaunchCounter, AllocWatcher> prof(c);
    CHECK(prof.config().tools.empty());
    CHECK(prof.running<LaunchCounter>());
    CHECK(prof.running<AllocWatcher>());
  }
  ::unsetenv("PASTA_TOOLS");
  REQUIRE(log.lines().size() == 1);
  CHECK(log.lines()[0] ==
        "PASTA_TOOLS names kernel_frq that this profiler does not have (it has launch_counter, "
        "alloc_watcher); running every tool");
}

TEST_CASE("SelfTimer adds its time and one call, off, nothing, the sums read as a line") {
  pasta::detail::SelfTime t;
  {
    pasta::detail::SelfTimer on(&t);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  { pasta::detail::SelfTimer off(nullptr); }
  CHECK(t.calls.load() == 1);
  CHECK(t.ns.load() >= 2'000'000);
  pasta::detail::SelfTime fixed;
  fixed.ns = 2'500'000;
  fixed.calls = 5;
  CHECK(pasta::detail::describe_self_time("operator starts", fixed) ==
        "operator starts: 5 calls, 2.5 ms in all, 500000 ns each");
  CHECK(pasta::detail::describe_self_time("none", pasta::detail::SelfTime{}) ==
        "none: 0 calls, 0.0 ms in all, 0 ns each");
}
