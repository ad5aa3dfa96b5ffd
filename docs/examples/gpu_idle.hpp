// A complete pasta tool: how long each GPU stream sat idle between kernels.
// docs/writing-a-tool.md walks through it; as include/pasta/tools/gpu_idle.hpp
// and one word in share/pasta/pipelines.json, `pasta run -t gpu_idle` runs it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include <pasta/core/events.hpp>
#include <pasta/core/report.hpp>

namespace pasta::tools {

// 1. A tool is a plain class: a name, on() for each event it wants, report().
class GpuIdle {
 public:
  static constexpr std::string_view name = "gpu_idle";

  // 2. The events it consumes. The profiler dispatches only these to it,
  //    and handlers subscribe only to events some tool consumes.
  void on(const KernelComplete& e) {
    if (e.start_ns && e.end_ns >= e.start_ns)
      kernels_[{e.device, e.stream}].push_back({e.start_ns, e.end_ns});
  }

  // 3. The report: summary lines and tables; the profiler writes them as
  //    text, JSON and CSV. page() tells the HTML report where it goes (after
  //    kernel_freq's 30) and what it says when there was nothing to measure.
  void report(Report& out) const {
    out.page(35).nothing("no kernel with device times: run a CUDA program", "streams");
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

}  // namespace pasta::tools
