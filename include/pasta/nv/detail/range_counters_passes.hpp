// RangeCounters' setup and user replay's passes: the profiler enabled for a
// context, and the passes of one measured launch run on pasta's replay
// thread with the program's memory restored between them. Included at the
// end of nv/detail/range_counters.hpp.
#pragma once

#include <pasta/nv/detail/range_counters.hpp>

namespace pasta::nv::detail {

inline void RangeCounters::enable(CUcontext ctx) {
  device_ = profiler_.initialize(ctx);
  profiler_.build(full_);
  ctx_ = ctx;
  // Under user replay every pass starts with L2 flushed: nothing to measure again.
  if (user_replay_) {
    plan_.configure(per_signature_, 0);
    return;
  }
  profiler_.build_one_pass_sets(cache_, max_cache_sets);
  plan_.configure(per_signature_, full_.passes > 1 ? cache_.size() : 0);
}

inline bool RangeCounters::run_passes(const Launch& launch) {
  pasta::detail::DispatchScope own;  // copies, flushes and relaunches are pasta's work
  // The launching thread's own default stream is not this thread's: the
  // legacy one instead (all work is waited for before and after anyway).
  const CUstream stream = owed_.stream == CU_STREAM_PER_THREAD ? nullptr : owed_.stream;
  bool saved = false;
  {
    Timer t(spent_.copy);
    saved = memory_.save(stream);
  }
  if (!saved) {
    ++tally_.unsaved;
    pasta::detail::log_once(
        "counters:unsaved",
        fmt::format("hardware counters: {}; launches are not measured while it is so "
                    "(PASTA_COUNTER_REPLAY=cupti lets CUPTI save only what a kernel writes)",
                    memory_.why()));
    return false;
  }
  try {
    const bool flush = flush_cache_ && with_l2([&] {
                         l2_.prepare(ctx_);
                         return true;
                       });
    for (std::uint32_t pass = 0;; ++pass) {
      if (pass) {
        Timer t(spent_.copy);
        memory_.restore(stream);
      }
      if (flush && flush_cache_ && with_l2([&] { return l2_.flush(ctx_, stream); }))
        ++tally_.flushes;
      start();
      const CUresult launched = relaunch(driver_, launch, stream);
      const bool last = stop_pass();
      driver_.call(launched, "launching the kernel for a replay pass");
      if (last) break;
      if (pass > 256) throw std::runtime_error("the range profiler never took its last pass");
    }
    Timer t(spent_.copy);
    memory_.restore(stream);
    driver_.call(driver_.stream_synchronize(stream), "restoring device memory");
  } catch (const std::exception&) {
    try {
      if (profiler_.running()) (void)profiler_.stop();
      memory_.restore(stream);
      driver_.call(driver_.stream_synchronize(stream), "restoring device memory");
    } catch (const std::exception& f) {
      pasta::detail::log(fmt::format(
          "hardware counters: the program's memory could not be restored after a failed "
          "replay ({}): its results may be wrong",
          f.what()));
    }
    throw;
  }
  tally_.replayed_bytes += memory_.saved_bytes();
  return true;
}

inline bool RangeCounters::stop_pass() {
  bool last = false;
  RangeProfiler::check(profiler_.stop(&last), "stopping the range profiler after a pass");
  return last;
}

}  // namespace pasta::nv::detail
