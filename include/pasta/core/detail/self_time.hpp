// PASTA_SELF_TIME: how long pasta's own callbacks take. A handler keeps one
// SelfTime per kind of callback and opens a SelfTimer at each call's entry:
// two clock reads when on, one branch when off. The handler says the sums
// at exit (describe_self_time), so the cost of profiling can be split
// between pasta's work on the program's threads and on its own.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <pasta/core/detail/thread.hpp>

namespace pasta::detail {

struct SelfTime {
  std::atomic<std::uint64_t> ns{0};
  std::atomic<std::uint64_t> calls{0};
};

// Adds the time from its construction to its destruction to `t` (nullptr: off).
class SelfTimer {
 public:
  explicit SelfTimer(SelfTime* t) : t_(t), start_(t ? steady_ns() : 0) {}
  ~SelfTimer() {
    if (!t_) return;
    t_->ns.fetch_add(steady_ns() - start_, std::memory_order_relaxed);
    t_->calls.fetch_add(1, std::memory_order_relaxed);
  }
  SelfTimer(const SelfTimer&) = delete;
  SelfTimer& operator=(const SelfTimer&) = delete;

 private:
  SelfTime* t_;
  std::uint64_t start_;
};

// "WHAT: N calls, X ms in all, Y ns each".
inline std::string describe_self_time(std::string_view what, const SelfTime& t) {
  const std::uint64_t ns = t.ns.load(), calls = t.calls.load();
  std::string line(what);
  line += ": " + std::to_string(calls) + " calls, " + std::to_string(ns / 1000000) + "." +
          std::to_string(ns / 100000 % 10) + " ms in all, " +
          std::to_string(calls ? ns / calls : 0) + " ns each";
  return line;
}

// PASTA_SELF_TIME_PARTS: where one kind of callback's time goes, section by
// section. A PartClock reads the clock at the call's entry and at the end of
// each section (mark), and adds each section's time to its sum.
struct SelfTimeParts {
  static constexpr std::size_t max = 8;
  std::array<std::atomic<std::uint64_t>, max> ns{};
  std::atomic<std::uint64_t> calls{0};
};

class PartClock {
 public:
  explicit PartClock(SelfTimeParts* p) : p_(p), last_(p ? steady_ns() : 0) {}
  ~PartClock() {
    if (p_) p_->calls.fetch_add(1, std::memory_order_relaxed);
  }
  PartClock(const PartClock&) = delete;
  PartClock& operator=(const PartClock&) = delete;

  // The section `i` ends here (sections not reached in a call add nothing).
  void mark(std::size_t i) {
    if (!p_) return;
    const std::uint64_t now = steady_ns();
    p_->ns[i].fetch_add(now - last_, std::memory_order_relaxed);
    last_ = now;
  }

 private:
  SelfTimeParts* p_;
  std::uint64_t last_;
};

// What one clock read costs here, the median of 21 runs of 1,000 reads: each
// section's time holds one (and its atomic add).
inline double clock_read_ns() {
  std::array<double, 21> runs{};
  for (double& r : runs) {
    const std::uint64_t start = steady_ns();
    for (int i = 0; i < 1000; ++i) (void)steady_ns();  // a system clock call: not elided
    r = static_cast<double>(steady_ns() - start) / 1000.0;
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

// "WHAT, per call: SECTION N ns, ... (CALLS calls; a clock read, K ns, is in each)".
inline std::string describe_parts(std::string_view what, const SelfTimeParts& p,
                                  std::initializer_list<std::string_view> sections) {
  const std::uint64_t calls = p.calls.load();
  std::string line(what);
  line += ", per call:";
  std::size_t i = 0;
  for (std::string_view s : sections) {
    if (i == SelfTimeParts::max) break;
    line += (i ? ", " : " ");
    line += s;
    line += " " + std::to_string(calls ? p.ns[i].load() / calls : 0) + " ns";
    ++i;
  }
  line += " (" + std::to_string(calls) + " calls; each section holds a clock read, " +
          std::to_string(static_cast<int>(clock_read_ns() + 0.5)) + " ns here)";
  return line;
}

}  // namespace pasta::detail
