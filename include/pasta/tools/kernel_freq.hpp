// Launches per kernel, with grid shapes and device time when completions
// carry timestamps. The top-N table answers "which kernels run most".
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/api.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/report.hpp>

namespace pasta::tools {

class KernelFreq {
 public:
  static constexpr std::string_view name = "kernel_freq";

  struct Shape {
    Dim3 grid, block;
    friend auto operator<=>(const Shape&, const Shape&) = default;
  };
  struct Stats {
    std::uint64_t launches = 0;     // KernelLaunch events
    std::uint64_t completions = 0;  // KernelComplete events
    std::uint64_t timed = 0;        // completions with both timestamps
    std::uint64_t total_ns = 0;
    std::uint64_t min_ns = std::numeric_limits<std::uint64_t>::max(), max_ns = 0;
    std::map<Shape, std::uint64_t> shapes;
    // Launches as seen by the host or, for device-only traces, by the device.
    std::uint64_t calls() const { return std::max(launches, completions); }
  };

  void on(const KernelLaunch& e);

  void on(const KernelComplete& e);

  // nullptr if the kernel was never seen.
  const Stats* stats(std::string_view kernel) const;

  void report(Report& out) const;

 private:
  static std::string dim_text(Dim3 d) { return fmt::format("({},{},{})", d.x, d.y, d.z); }
  static std::string shape_text(const Shape& s) {
    return dim_text(s.grid) + "x" + dim_text(s.block);
  }

  Stats& at(NameId id);

  std::vector<Stats> by_name_;  // indexed by NameId: ids are dense
};

}  // namespace pasta::tools

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/tools/detail/kernel_freq_impl.hpp>
#endif
