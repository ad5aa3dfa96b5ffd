// Where RangeCounters' wall time goes, step by step (start-up, launches
// measured, images armed, L2 flushes, memory saved), for the verbose summary.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <pasta/core/detail/fmt.hpp>

namespace pasta::nv::detail {

struct CounterTiming {
  // Wall time spent in one kind of step, and how many.
  using Clock = std::chrono::steady_clock;
  struct Spent {
    double ms = 0;
    std::uint64_t n = 0;
    void add(Clock::time_point since) {
      ms += std::chrono::duration<double, std::milli>(Clock::now() - since).count();
      ++n;
    }
  };
  struct Timer {
    Spent& into;
    Clock::time_point start = Clock::now();
    ~Timer() { into.add(start); }
  };

  Spent startup, full, cache, passed, use, arm, start, drain, flush, copy;

  std::string summary() const {
    const auto& s = *this;
    return fmt::format(
        "start-up {:.0f} ms; launches measured in full {:.0f} ms ({}), in one pass {:.0f} ms ({}), "
        "passed over {:.0f} ms ({}); range profiler set up for another metric set {:.0f} ms ({}); "
        "images configured {:.0f} "
        "ms ({}); profiling started {:.0f} ms ({}), stopped and decoded {:.0f} ms ({}); L2 "
        "flushes {:.0f} ms ({}); memory saved and restored {:.0f} ms ({})",
        s.startup.ms, s.full.ms, s.full.n, s.cache.ms, s.cache.n, s.passed.ms, s.passed.n, s.use.ms,
        s.use.n, s.arm.ms, s.arm.n, s.start.ms, s.start.n, s.drain.ms, s.drain.n, s.flush.ms,
        s.flush.n, s.copy.ms, s.copy.n);
  }
};

}  // namespace pasta::nv::detail
