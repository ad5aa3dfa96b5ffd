// Which metric set measures a kernel launch, for RangeCounters: a signature's
// first launches are measured with every metric (kernel replay, many passes),
// its next ones again with each one-pass set of the cache-sensitive metrics in
// turn, and the rest not at all. Plain bookkeeping, no CUPTI: tested on the
// CPU (tests/nv/counters/counter_plan_test.cpp).
//
// Switching the profiler from one set to another and back costs about two
// measurements in full (a fresh range-profiler object and a start each way),
// so a launch due for a one-pass set while the profiler is set up for the full
// set waits for its signature's next launch: once per signature, and not when
// the launch due before it waited too (a run of them is a phase of repeated
// launches, such as a model's second block, worth switching for). A signature
// whose only later launch waited keeps its replayed numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace pasta::nv::detail {

class CounterPlan {
 public:
  static constexpr int none = -1;  // not measured
  static constexpr int full = 0;   // every metric; set k >= 1: the k-th one-pass set

  // `per_signature` launches of a signature measured in full (0: every
  // launch); `one_pass_sets` sets measured after them (0: none).
  void configure(std::uint64_t per_signature, std::size_t one_pass_sets) {
    per_signature_ = per_signature;
    one_pass_sets_ = one_pass_sets < 32 ? one_pass_sets : 32;
  }

  // The set this launch of `signature` is measured with, `current` being the
  // set the profiler is set up for (none: none yet); counted as measured.
  int pick(std::uint64_t signature, int current) {
    Seen& seen = seen_[signature];
    if (!per_signature_ || seen.full < per_signature_) {
      ++seen.full;
      waited_ = false;
      return full;
    }
    int set = none;
    for (std::size_t k = 0; k < one_pass_sets_ && set == none; ++k)
      if (!(seen.one_pass & (1u << k))) set = static_cast<int>(k) + 1;
    if (set == none) return none;
    if (current == full && !waited_ && !seen.waited) {
      waited_ = seen.waited = true;
      ++waits_;
      return none;
    }
    seen.one_pass |= 1u << (set - 1);
    return set;
  }

  // A measurement with `set` lost (its range did not match its launch): the
  // signature's next launch is measured with it again.
  void lost(std::uint64_t signature, int set) {
    auto it = seen_.find(signature);
    if (it == seen_.end() || set == none) return;
    if (set == full && it->second.full) --it->second.full;
    if (set > full) it->second.one_pass &= ~(1u << (set - 1));
  }

  // Launches due for a one-pass set that waited for their signature's next.
  std::uint64_t waits() const { return waits_; }

 private:
  struct Seen {
    std::uint64_t full = 0;      // launches measured with every metric
    std::uint32_t one_pass = 0;  // bit k: a launch measured with one-pass set k + 1
    bool waited = false;         // a launch due for a one-pass set waited
  };
  std::unordered_map<std::uint64_t, Seen> seen_;  // per signature
  std::uint64_t per_signature_ = 1;
  std::size_t one_pass_sets_ = 0;
  bool waited_ = false;  // the last launch due for a one-pass set waited
  std::uint64_t waits_ = 0;
};

}  // namespace pasta::nv::detail
