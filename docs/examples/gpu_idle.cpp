// A complete pasta tool: how long each GPU stream sat idle between kernels.
// docs/writing-a-tool.md walks through it; a test builds it and replays a
// trace recorded on an H100 through it, so the doc stays true.
#include <pasta/pasta.hpp>
#include <pasta/trace.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <vector>

// 1. A tool is a plain class: a name, on() for each event it wants, report().
class GpuIdle {
 public:
  static constexpr std::string_view name = "gpu_idle";

  // 2. The events it consumes. The profiler dispatches only these to it,
  //    and handlers subscribe only to events some tool consumes.
  void on(const pasta::KernelComplete& e) {
    if (e.start_ns && e.end_ns >= e.start_ns)
      kernels_[{e.device, e.stream}].push_back({e.start_ns, e.end_ns});
  }

  // 3. The report: summary lines and tables; the profiler writes them as
  //    text, JSON and CSV.
  void report(pasta::Report& out) const {
    auto& t = out.table("streams", "Idle time between kernels, per stream",
                        {"device", "stream", "kernels", "busy_us", "idle_us", "idle_pct",
                         "longest_gap_us"});
    std::uint64_t all_busy = 0, all_idle = 0;
    for (auto [key, spans] : kernels_) {
      std::sort(spans.begin(), spans.end());
      std::uint64_t busy = 0, idle = 0, longest = 0, covered = spans.front().first;
      for (const auto& [start, end] : spans) {
        if (start > covered) {  // a gap: nothing ran on this stream
          idle += start - covered;
          longest = std::max(longest, start - covered);
        }
        busy += end - std::max(start, std::min(covered, end));
        covered = std::max(covered, end);
      }
      const double span = static_cast<double>(busy + idle);
      t.row(key.first, key.second, spans.size(), busy / 1e3, idle / 1e3,
            span ? 100.0 * idle / span : 0.0, longest / 1e3);
      all_busy += busy;
      all_idle += idle;
    }
    out.summary("streams", kernels_.size());
    out.summary("busy (us)", all_busy / 1e3);
    out.summary("idle between kernels (us)", all_idle / 1e3);
  }

 private:
  // (device, stream) -> (start, end) of each kernel, in device nanoseconds.
  using Span = std::pair<std::uint64_t, std::uint64_t>;
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<Span>> kernels_;
};

// 4. Compose it with a handler and a processor. Here the handler replays a
//    recorded trace (argv[1]); nv::Cupti in its place profiles a live program.
int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gpu_idle TRACE\n");
    return 2;
  }
  pasta::Config cfg;
  cfg.trace_file = argv[1];
  cfg.output_dir = argc > 2 ? argv[2] : "gpu-idle-out";
  cfg.print = pasta::PrintTo::stdout_;
  pasta::Profiler<pasta::Replay, pasta::proc::Cpu, GpuIdle> profiler(cfg);
  return profiler.handler().complete() ? 0 : 1;
}  // 5. The profiler writes the report when it goes out of scope.
