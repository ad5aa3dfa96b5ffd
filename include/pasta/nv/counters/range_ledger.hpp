// Which range of a counter-data image is which launch, for RangeCounters:
// ranges carry no launch id, only their order. Also when an image is full
// and when a launch may be profiled and passed over. No CUPTI: tested on
// the CPU (tests/nv/counters/range_ledger_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pasta::nv::detail {

class RangeLedger {
 public:
  // Ranges an image holds (RangeProfiler::ranges_per_image): room for a
  // batch of 24 launches of three ranges each (RangeCounters::set_batch).
  static constexpr std::size_t ranges_per_image = 88;
  // Ranges an image takes before it is decoded and a fresh one armed; the
  // rest of its ranges_per_image are room for ranges no launch explains.
  static constexpr std::size_t room = ranges_per_image - 16;
  // Launches profiled in one pass in a row and passed over, at most this many.
  static constexpr std::uint32_t pass_over = 4;

  // A range of the image not decoded yet: a launch measured, or one profiled
  // and passed over (pasta's own kernels, a launch not measured).
  struct Pending {
    std::uint64_t correlation, signature;
    bool measured;  // not: a range passed over (pasta's own kernels, a launch not measured)
  };
  // The ranges a decode found past those decoded before: the first one's
  // index, how many, whether they are as many as the launches pending (if
  // not, which is whose is not known), and how many more than those.
  struct Match {
    std::size_t first = 0, ranges = 0;
    bool matched = false;
    std::size_t extra = 0;
  };

  // A fresh image: nothing in it decoded yet.
  void fresh_image() { decoded_ = 0; }
  // The image took its room's worth: decoded, a fresh one is armed.
  bool image_full() const { return decoded_ >= room; }
  // Whether `n` more ranges fit in the image's room.
  bool fits(std::size_t n) const { return decoded_ + pending_.size() + n <= room; }
  // With the launches pending, the image is full: time to decode.
  bool nearly_full() const { return decoded_ + pending_.size() >= room; }

  // Whether a launch not measured may be profiled and passed over (cheaper
  // than stopping and starting again), the profiler running on a one-pass set.
  bool can_pass_over() const {
    return passed_in_row_ < pass_over && decoded_ + pending_.size() < room;
  }
  void pass_over_launch(std::uint64_t correlation, std::uint64_t signature) {
    ++passed_in_row_;
    pending_.push_back({correlation, signature, false});
  }
  // A launch to measure ends a run of launches passed over.
  void end_run() { passed_in_row_ = 0; }
  // A range of pasta's own kernel, profiled and passed over (the L2 flush,
  // a restore's copies of variables).
  void add_own() { pending_.push_back({0, 0, false}); }
  void add_measured(std::uint64_t correlation, std::uint64_t signature) {
    pending_.push_back({correlation, signature, true});
  }

  const std::vector<Pending>& pending() const { return pending_; }
  // The image holds `total` ranges in all (a count below those decoded
  // before: a fresh image's, counted from its first).
  Match match(std::size_t total) const {
    Match m;
    m.first = total >= decoded_ ? decoded_ : 0;
    m.ranges = total - m.first;
    m.matched = m.ranges == pending_.size();
    if (m.ranges > pending_.size()) m.extra = m.ranges - pending_.size();
    return m;
  }
  // After a decode of `total` ranges: none pending.
  void decoded(std::size_t total) {
    decoded_ = total;
    pending_.clear();
  }
  // Measuring stopped (a failure): the pending launches are forgotten.
  void drop() { pending_.clear(); }

 private:
  std::vector<Pending> pending_;  // the launches of the ranges in the image, in order
  std::size_t decoded_ = 0;       // ranges of the image decoded
  std::uint32_t passed_in_row_ = 0;
};

}  // namespace pasta::nv::detail
