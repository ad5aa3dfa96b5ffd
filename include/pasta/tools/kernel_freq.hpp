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

  void on(const KernelLaunch& e) {
    Stats& s = at(e.name);
    ++s.launches;
    ++s.shapes[{e.grid, e.block}];
  }

  void on(const KernelComplete& e) {
    Stats& s = at(e.name);
    ++s.completions;
    if (s.completions > s.launches) ++s.shapes[{e.grid, e.block}];
    if (e.start_ns && e.end_ns >= e.start_ns) {
      const std::uint64_t d = e.end_ns - e.start_ns;
      ++s.timed;
      s.total_ns += d;
      s.min_ns = std::min(s.min_ns, d);
      s.max_ns = std::max(s.max_ns, d);
    }
  }

  // nullptr if the kernel was never seen.
  const Stats* stats(std::string_view kernel) const {
    for (std::size_t i = 0; i < by_name_.size(); ++i)
      if (by_name_[i].calls() && name_of(NameId{static_cast<std::uint32_t>(i)}) == kernel)
        return &by_name_[i];
    return nullptr;
  }

  void report(Report& out) const;

 private:
  static std::string dim_text(Dim3 d) { return fmt::format("({},{},{})", d.x, d.y, d.z); }
  static std::string shape_text(const Shape& s) {
    return dim_text(s.grid) + "x" + dim_text(s.block);
  }

  Stats& at(NameId id) {
    if (id.value >= by_name_.size()) by_name_.resize(id.value + 1);
    return by_name_[id.value];
  }

  std::vector<Stats> by_name_;  // indexed by NameId: ids are dense
};

}  // namespace pasta::tools

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/tools/detail/kernel_freq_impl.hpp>
#endif
