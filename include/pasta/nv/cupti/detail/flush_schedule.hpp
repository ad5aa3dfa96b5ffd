// When pasta's activity worker wakes and when it asks CUPTI for a flush:
// a flush after a synchronisation at most every min_gap, one every period
// (0: none), and a wake-up at least every wake. A request that comes sooner
// than min_gap after the last flush waits for the gap asleep: the worker
// never spins (it once did, and slowed every program thread that queues an
// event). Times are passed in, so a test drives it with a clock of its own.
#pragma once

#include <algorithm>
#include <chrono>

namespace pasta::nv::detail {

class FlushSchedule {
 public:
  using clock = std::chrono::steady_clock;

  FlushSchedule(clock::duration min_gap, clock::duration period, clock::duration wake,
                clock::time_point start)
      : min_gap_(min_gap), period_(period), wake_(wake), last_(start) {}

  void request() { requested_ = true; }
  // A requested flush the gap allows at `now`: the worker wakes for it.
  bool due(clock::time_point now) const { return requested_ && now - last_ >= min_gap_; }
  // Until when the worker sleeps if nothing wakes it sooner.
  clock::time_point deadline(clock::time_point now) const {
    clock::time_point d = now + wake_;
    if (requested_) d = std::min(d, last_ + min_gap_);
    if (period_.count()) d = std::min(d, last_ + period_);
    return std::max(d, now);
  }
  // At a wake-up: whether to flush now (a due request, or the period is up);
  // the request is then taken.
  bool take(clock::time_point now) {
    const bool flush = due(now) || (period_.count() && now - last_ >= period_);
    if (flush) requested_ = false;
    return flush;
  }
  void flushed(clock::time_point at) { last_ = at; }

 private:
  clock::duration min_gap_, period_, wake_;
  clock::time_point last_;
  bool requested_ = false;
};

}  // namespace pasta::nv::detail
