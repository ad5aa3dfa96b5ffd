// Events per second through four analysis tools, dispatched three ways:
//   (a) a pasta pipeline (Profiler<Direct, PassThrough, 4 tools>),
//   (b) the same tools behind a virtual interface with a shared_ptr per
//       event, the way AccelProf dispatches,
//   (c) a hand-written loop calling the tools directly.
// Prints the ratios measured in this run and writes them as CSV.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include <fmt/core.h>

#include "dispatch_workload.hpp"

using namespace pasta;
using bench::AnyEvent;

namespace {

constexpr std::uint64_t kernels = 512;  // about 17.5k events (1.5 MB) per pass
const std::vector<AnyEvent>& stream() {
  static const auto s = bench::timed_events(kernels);
  return s;
}

Config quiet() {
  Config c;
  c.print = PrintTo::none;
  c.formats = 0;
  c.read_env = false;
  return c;
}

// --- (a) pasta ------------------------------------------------------------------
using Pipeline = Profiler<Direct, proc::PassThrough, tools::KernelFreq, tools::MemHotness,
                          tools::EventCount, tools::ScopeTime>;

template <class Prof>
Prof& prepared() {
  static Prof prof(quiet());
  static bool once = [] {
    for (const auto& a : bench::setup_events()) prof.emit(a);
    return true;
  }();
  (void)once;
  return prof;
}

// Handlers deliver events in buffers (CUPTI activity buffers, trace blocks):
// one lock per 4096 events.
template <class Prof>
void batched(benchmark::State& state) {
  auto& prof = prepared<Prof>();
  const auto& events = stream();
  for (auto _ : state) {
    for (std::size_t i = 0; i < events.size(); i += 4096) {
      // Pointers, not events[k]: the loop must not differ from (c)'s range-for.
      const AnyEvent* first = events.data() + i;
      const AnyEvent* last = events.data() + std::min(events.size(), i + 4096);
      prof.batch([first, last](auto& sink) {
        for (const AnyEvent* ev = first; ev != last; ++ev)
          std::visit([&](const auto& e) { sink.emit(e); }, *ev);
      });
    }
  }
  state.SetItemsProcessed(state.iterations() * events.size());
}

void pasta_batched(benchmark::State& state) { batched<Pipeline>(state); }

// Callback-style handlers deliver one event per call: one lock per event.
void pasta_per_event(benchmark::State& state) {
  auto& prof = prepared<Pipeline>();
  const auto& events = stream();
  for (auto _ : state)
    for (const auto& ev : events) std::visit([&](const auto& e) { prof.emit(e); }, ev);
  state.SetItemsProcessed(state.iterations() * events.size());
}

// The same with proc::Cpu: correlation (address -> allocation, launch ->
// completion) on top of dispatch.
using Correlating = Profiler<Direct, proc::Cpu, tools::KernelFreq, tools::MemHotness,
                             tools::EventCount, tools::ScopeTime>;
void pasta_with_correlation(benchmark::State& state) { batched<Correlating>(state); }

// --- (b) virtual interface, shared_ptr per event ----------------------------------
struct VEvent {
  explicit VEvent(EventKind k) : kind(k) {}
  virtual ~VEvent() = default;
  EventKind kind;
};
template <class E>
struct VBox final : VEvent {
  explicit VBox(const E& e) : VEvent(E::kind), event(e) {}
  E event;
};
using EventPtr = std::shared_ptr<VEvent>;

struct VTool {
  virtual ~VTool() = default;
  virtual void evt_callback(EventPtr evt) = 0;
};

// Each tool unpacks the events it handles, as a tool of that design does.
template <class T, class... Handled>
struct VAdapter final : VTool {
  T tool;
  explicit VAdapter(const Config& c) : tool(make(c)) {}
  static T make(const Config& c) {
    if constexpr (std::is_constructible_v<T, const Config&>)
      return T(c);
    else
      return T();
  }
  void evt_callback(EventPtr evt) override { (try_one<Handled>(evt) || ...); }
  template <class E>
  bool try_one(const EventPtr& evt) {
    if (evt->kind != E::kind) return false;
    auto typed = std::static_pointer_cast<VBox<E>>(evt);
    tool.on(typed->event);
    return true;
  }
};

struct VirtualPipeline {
  std::vector<std::unique_ptr<VTool>> tools;
  VirtualPipeline() {
    const Config c = quiet();
    tools.push_back(std::make_unique<VAdapter<tools::KernelFreq, KernelLaunch, KernelComplete>>(c));
    tools.push_back(std::make_unique<VAdapter<tools::MemHotness, MemAlloc, MemAccess>>(c));
    tools.push_back(std::make_unique<VAdapter<tools::EventCount, KernelLaunch, KernelComplete,
                                              MemAlloc, MemAccess, ScopeBegin, ScopeEnd>>(c));
    tools.push_back(std::make_unique<VAdapter<tools::ScopeTime, ScopeBegin, ScopeEnd>>(c));
  }
  template <class E>
  void emit(const E& e) {
    EventPtr evt = std::make_shared<VBox<E>>(e);
    for (auto& t : tools) t->evt_callback(evt);
  }
};

void virtual_shared_ptr(benchmark::State& state) {
  static VirtualPipeline pipe;
  static bool once = [] {
    for (const auto& a : bench::setup_events()) pipe.emit(a);
    return true;
  }();
  (void)once;
  const auto& events = stream();
  for (auto _ : state)
    for (const auto& ev : events) std::visit([&](const auto& e) { pipe.emit(e); }, ev);
  state.SetItemsProcessed(state.iterations() * events.size());
}

// --- (c) hand-written ---------------------------------------------------------------
struct HandWritten {
  tools::KernelFreq freq;
  tools::MemHotness hot{quiet()};
  tools::EventCount count;
  tools::ScopeTime scopes;
  void on(const KernelLaunch& e) { freq.on(e), count.on(e); }
  void on(const KernelComplete& e) { freq.on(e), count.on(e); }
  void on(const MemAlloc& e) { hot.on(e), count.on(e); }
  void on(const MemAccess& e) { hot.on(e), count.on(e); }
  void on(const ScopeBegin& e) { count.on(e), scopes.on(e); }
  void on(const ScopeEnd& e) { count.on(e), scopes.on(e); }
};

void hand_written(benchmark::State& state) {
  static HandWritten tools;
  static bool once = [] {
    for (const auto& a : bench::setup_events()) tools.on(a);
    return true;
  }();
  (void)once;
  const auto& events = stream();
  for (auto _ : state)
    for (const auto& ev : events) std::visit([&](const auto& e) { tools.on(e); }, ev);
  state.SetItemsProcessed(state.iterations() * events.size());
}

// Keeps the median of each benchmark's repetitions.
class Collect : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> ns_per_event;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Aggregate || r.aggregate_name != "median") continue;
      const auto it = r.counters.find("items_per_second");
      if (it != r.counters.end() && it->second.value > 0)
        ns_per_event[r.run_name.function_name] = 1e9 / it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

}  // namespace

BENCHMARK(hand_written)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(pasta_batched)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(pasta_per_event)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(pasta_with_correlation)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(virtual_shared_ptr)->Repetitions(5)->ReportAggregatesOnly(true);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  Collect collect;
  benchmark::RunSpecifiedBenchmarks(&collect);
  auto& t = collect.ns_per_event;
  if (!t.count("hand_written") || !t.count("pasta_batched")) return 0;  // filtered run
  const double c = t["hand_written"];
  const std::string csv_path = argc > 1 ? argv[1] : "dispatch.csv";
  std::FILE* csv = std::fopen(csv_path.c_str(), "w");
  if (csv) std::fprintf(csv, "variant,ns_per_event,events_per_second,ratio_to_hand_written\n");
  fmt::print("\nDispatch through 4 tools, {} events per pass, median of 5; {} ({} threads)\n",
             stream().size(), cpu_name(), std::thread::hardware_concurrency());
  fmt::print("{:<34} {:>10} {:>14} {:>16}\n", "variant", "ns/event", "Mevents/s",
             "vs hand-written");
  const std::pair<const char*, const char*> rows[] = {
      {"hand_written", "(c) hand-written loop"},
      {"pasta_batched", "(a) pasta, lock per 4096 events"},
      {"pasta_per_event", "(a) pasta, lock per event"},
      {"pasta_with_correlation", "(a) pasta + proc::Cpu correlation"},
      {"virtual_shared_ptr", "(b) virtual + shared_ptr/event"}};
  for (const auto& [key, label] : rows) {
    if (!t.count(key)) continue;
    fmt::print("{:<34} {:>10.2f} {:>14.1f} {:>15.2f}x\n", label, t[key], 1e3 / t[key], t[key] / c);
    if (csv) std::fprintf(csv, "%s,%.3f,%.0f,%.4f\n", key, t[key], 1e9 / t[key], t[key] / c);
  }
  if (t.count("virtual_shared_ptr"))
    fmt::print("(b) / (a) batched: {:.1f}x  (goal: at least 10x)\n",
               t["virtual_shared_ptr"] / t["pasta_batched"]);
  fmt::print("(a) batched / (c): {:.3f}x  (goal: within 1.05x)\n", t["pasta_batched"] / c);
  if (csv) std::fclose(csv);
  return 0;
}
