// Hardware counters per kernel launch for nv::Cupti, through CUPTI's Range
// Profiler (CUDA 12.6 and later): auto ranges, one per kernel, and kernel
// replay, in which CUPTI runs each kernel as many passes as the metrics need
// and saves and restores the memory it writes, so the program's results do
// not change. The metrics are core/metrics.hpp's, under ncu's names.
//
// Ranges carry no launch id, only their order: launches are serialised
// between before() and after() (kernel replay serialises them anyway), and
// the k-th range of an image is the k-th launch before() saw. Only the first
// context a launch came from is measured. Launches of a signature past the
// first few are not measured: profiling is stopped around them, so they run
// at full speed and tools give them the measured mean.
//
// Caches: ncu writes back and evicts L2 before each pass by default. Under
// CUPTI's kernel replay that cannot be done: CUPTI saves the memory the
// kernel may write before the first pass and restores it before each other
// one, inside the launch, and those copies leave L2 full of dirty lines that
// the kernel's own traffic then writes back (a kernel whose 4 MB of output
// stays in L2 shows megabytes of DRAM writes). So the next launch of the
// signature is measured again for the cache-sensitive metrics alone (as
// many of metrics::cache_sensitive as fit one pass): no save, no restore,
// and L2 flushed just before it (L2Flush), as under ncu. Fields a
// measurement did not collect are NaN; tools take each metric from the
// measurements with the fewest passes. Each such launch has a counter-data
// image of its own (the flush kernel runs with the profiler stopped);
// full measurements share one, up to ranges_per_image.
#pragma once

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/metrics.hpp>
#include <pasta/core/pipeline.hpp>
#include <pasta/nv/detail/cupti_api.hpp>
#include <pasta/nv/detail/l2_flush.hpp>

namespace pasta::nv::detail {

class RangeCounters {
 public:
  // Ranges decoded at a time: the counter-data image holds this many.
  static constexpr std::size_t ranges_per_image = 64;

  RangeCounters() {
    for (std::size_t i = 0; i < metrics::counters.size(); ++i) full_.add(i);
  }
  RangeCounters(const RangeCounters&) = delete;
  RangeCounters& operator=(const RangeCounters&) = delete;

  // Launches of one signature measured (0: all); the rest run unmeasured.
  void set_per_signature(std::uint64_t n) { per_signature_ = n; }
  // Whether L2 is flushed before each launch measured for the cache-sensitive
  // metrics (PASTA_COUNTER_CACHE).
  void set_flush_cache(bool on) { flush_cache_ = on; }

  // On the launching thread, before the launch API runs: returns whether the
  // launch is measured. `signature` names (kernel, grid, block, operator
  // path), `stream` the stream it is launched on. after() must follow on
  // the same thread.
  template <class Emit>
  bool before(CUcontext ctx, CUstream stream, std::uint64_t correlation, std::uint64_t signature,
              Emit&& emit) {
    mutex_.lock();
    if (failed_ || !ctx) return false;
    try {
      if (!ctx_) enable(ctx);
      if (ctx != ctx_) {
        ++other_context_;
        return false;
      }
      Seen& seen = seen_[signature];
      MetricSet* set = nullptr;
      if (!per_signature_ || seen.full < per_signature_)
        set = &full_;
      else if (!cache_.index.empty() && full_.passes > 1 && !seen.cache)
        set = &cache_;
      if (!set) {
        ++skipped_;
        // Profiling stays off until a launch to measure: this one runs as is.
        if (running_) drain(emit);
        return false;
      }
      if (set == &full_)
        ++seen.full;
      else
        seen.cache = true;
      // Only the cache pass gets a flushed L2: under replay the profiler's
      // own save and restore fill it again, so full measurements keep
      // sharing an image.
      const bool flush = flush_cache_ && set == &cache_;
      if (running_ && (flush || armed_ != set)) drain(emit);
      if (flush) flush_l2(stream);
      if (!running_) arm(*set);
      pending_.push_back({correlation, signature});
      return true;
    } catch (const std::exception& e) {
      fail(e.what());
      return false;
    }
  }
  // After the launch API returned (the kernel ran, replayed, on the device).
  template <class Emit>
  void after(Emit&& emit) {
    try {
      // Full: decoded now; the next measured launch arms a fresh image.
      if (!failed_ && pending_.size() >= ranges_per_image) drain(emit);
    } catch (const std::exception& e) {
      fail(e.what());
    }
    mutex_.unlock();
  }
  // The launches not decoded yet; profiling stops. Call once, at the end.
  template <class Emit>
  void finish(Emit&& emit) {
    std::lock_guard lock(mutex_);
    try {
      if (!failed_ && running_ && !pending_.empty()) drain(emit);
    } catch (const std::exception& e) {
      fail(e.what());
    }
    teardown();
    pasta::detail::DispatchScope own;
    l2_.release();
  }

  std::uint64_t measured() const { return measured_; }
  // Launches measured again for the cache-sensitive metrics alone.
  std::uint64_t remeasured() const { return remeasured_; }
  std::uint64_t skipped() const { return skipped_; }
  std::uint64_t other_context() const { return other_context_; }
  std::uint64_t mismatched() const { return mismatched_; }
  std::uint32_t passes() const { return full_.passes; }
  // The ncu metrics measured again in one pass, comma-separated.
  std::string cache_metrics() const {
    return cache_.names.empty() ? "none" : pasta::detail::join(cache_.names, ", ");
  }
  const std::string& error() const { return error_; }
  // Why L2 could not be flushed (then it was not, from that launch on).
  const std::string& flush_error() const { return flush_error_; }
  std::uint64_t flushes() const { return flushes_; }

 private:
  template <class P>
  static P params(std::size_t size) {
    P p{};
    p.structSize = size;
    return p;
  }
  static void check(CUptiResult r, const char* what) {
    if (r == CUPTI_SUCCESS) return;
    if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
      throw std::runtime_error(
          fmt::format("{}: {}. Reading GPU performance counters needs root, or the driver option "
                      "NVreg_RestrictProfilingToAdminUsers=0",
                      what, cupti_error(r)));
    throw std::runtime_error(fmt::format("{}: {}", what, cupti_error(r)));
  }

  // A set of metrics measured together: its names, which `counters` each
  // is, and what CUPTI built for it.
  struct MetricSet {
    std::vector<const char*> names;
    std::vector<std::size_t> index;  // into metrics::counters
    CUpti_Profiler_Host_Object* host = nullptr;
    std::vector<std::uint8_t> config, data;  // config image, counter-data image
    std::uint32_t passes = 0;
    void add(std::size_t i) {
      names.push_back(metrics::counters[i].name.data());
      index.push_back(i);
    }
  };

  void enable(CUcontext ctx) {
    auto init =
        params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    check(cuptiProfilerInitialize(&init), "initialising the CUPTI profiler");
    profiler_initialized_ = true;
    check(cuptiGetDeviceId(ctx, &device_), "finding the device of the context");

    auto chip =
        params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
    chip.deviceIndex = device_;
    check(cuptiDeviceGetChipName(&chip), "finding the GPU's chip name");

    auto avail = params<CUpti_Profiler_GetCounterAvailability_Params>(
        CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
    avail.ctx = ctx;
    check(cuptiProfilerGetCounterAvailability(&avail), "asking which counters are available");
    std::vector<std::uint8_t> availability(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = availability.data();
    check(cuptiProfilerGetCounterAvailability(&avail), "asking which counters are available");
    build(full_, chip.pChipName, availability);
    // The cache-sensitive metrics one pass holds, most wanted first.
    for (auto field : metrics::cache_sensitive) {
      const auto* c = std::find_if(metrics::counters.begin(), metrics::counters.end(),
                                   [&](const metrics::Counter& k) { return k.field == field; });
      MetricSet trial;
      for (std::size_t i : cache_.index) trial.add(i);
      trial.add(static_cast<std::size_t>(c - metrics::counters.begin()));
      build(trial, chip.pChipName, availability);
      release(trial);
      if (trial.passes == 1) cache_ = std::move(trial);
    }
    if (!cache_.index.empty()) build(cache_, chip.pChipName, availability);

    ctx_ = ctx;
  }

  // The range profiler, enabled for `set`. Switching sets takes a fresh
  // range profiler object: one object configured for one set and then the
  // other mixed up the two (counts of an earlier launch in a later one, and
  // a PyTorch program that stopped making progress, on an H100).
  void use(MetricSet& set) {
    if (object_ && sized_ == &set) return;
    if (object_) {
      auto off = params<CUpti_RangeProfiler_Disable_Params>(
          CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
      off.pRangeProfilerObject = object_;
      object_ = nullptr;
      check(cuptiRangeProfilerDisable(&off), "disabling the range profiler");
    }
    auto on =
        params<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
    on.ctx = ctx_;
    check(cuptiRangeProfilerEnable(&on), "enabling the range profiler");
    object_ = on.pRangeProfilerObject;
    auto data = params<CUpti_RangeProfiler_GetCounterDataSize_Params>(
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
    data.pRangeProfilerObject = object_;
    data.pMetricNames = set.names.data();
    data.numMetrics = set.names.size();
    data.maxNumOfRanges = ranges_per_image;
    data.maxNumRangeTreeNodes = ranges_per_image;
    check(cuptiRangeProfilerGetCounterDataSize(&data), "sizing the counter-data image");
    set.data.resize(data.counterDataSize);
    sized_ = &set;
  }

  // The host object, config image and pass count of one set.
  void build(MetricSet& set, const char* chip, std::vector<std::uint8_t>& availability) {
    auto host = params<CUpti_Profiler_Host_Initialize_Params>(
        CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    host.pChipName = chip;
    host.pCounterAvailabilityImage = availability.data();
    check(cuptiProfilerHostInitialize(&host), "initialising the profiler host");
    set.host = host.pHostObject;

    auto add = params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    add.pHostObject = set.host;
    add.ppMetricNames = set.names.data();
    add.numMetrics = set.names.size();
    check(cuptiProfilerHostConfigAddMetrics(&add),
          "adding the metrics (an unknown metric name for this GPU?)");
    auto size = params<CUpti_Profiler_Host_GetConfigImageSize_Params>(
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
    size.pHostObject = set.host;
    check(cuptiProfilerHostGetConfigImageSize(&size), "sizing the config image");
    set.config.resize(size.configImageSize);
    auto image = params<CUpti_Profiler_Host_GetConfigImage_Params>(
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
    image.pHostObject = set.host;
    image.pConfigImage = set.config.data();
    image.configImageSize = set.config.size();
    check(cuptiProfilerHostGetConfigImage(&image), "building the config image");
    auto passes = params<CUpti_Profiler_Host_GetNumOfPasses_Params>(
        CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
    passes.pConfigImage = set.config.data();
    passes.configImageSize = set.config.size();
    check(cuptiProfilerHostGetNumOfPasses(&passes), "counting the replay passes");
    set.passes = static_cast<std::uint32_t>(passes.numOfPasses);
  }

  void release(MetricSet& set) {
    if (!set.host) return;
    auto off = params<CUpti_Profiler_Host_Deinitialize_Params>(
        CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
    off.pHostObject = set.host;
    (void)cuptiProfilerHostDeinitialize(&off);
    set.host = nullptr;
  }

  // A fresh counter-data image of `set`, its configuration, profiling started.
  void arm(MetricSet& set) {
    use(set);
    std::fill(set.data.begin(), set.data.end(), std::uint8_t{0});
    auto init = params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    init.pRangeProfilerObject = object_;
    init.pCounterData = set.data.data();
    init.counterDataSize = set.data.size();
    check(cuptiRangeProfilerCounterDataImageInitialize(&init),
          "initialising the counter-data image");
    auto config = params<CUpti_RangeProfiler_SetConfig_Params>(
        CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
    config.pRangeProfilerObject = object_;
    config.pConfig = set.config.data();
    config.configSize = set.config.size();
    config.pCounterDataImage = set.data.data();
    config.counterDataImageSize = set.data.size();
    config.range = CUPTI_AutoRange;
    config.replayMode = CUPTI_KernelReplay;
    config.maxRangesPerPass = ranges_per_image;
    config.numNestingLevels = 1;
    config.minNestingLevel = 1;
    config.passIndex = 0;
    config.targetNestingLevel = 1;
    check(cuptiRangeProfilerSetConfig(&config), "configuring the range profiler");
    auto start =
        params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
    start.pRangeProfilerObject = object_;
    check(cuptiRangeProfilerStart(&start), "starting the range profiler");
    running_ = true;
    armed_ = &set;
  }

  CUptiResult stop() {
    auto p = params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object_;
    running_ = false;
    return cuptiRangeProfilerStop(&p);
  }

  // Stops, decodes the image and emits KernelCounters for its ranges.
  template <class Emit>
  void drain(Emit& emit) {
    check(stop(), "stopping the range profiler");
    MetricSet& set = *armed_;
    auto decode = params<CUpti_RangeProfiler_DecodeData_Params>(
        CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
    decode.pRangeProfilerObject = object_;
    check(cuptiRangeProfilerDecodeData(&decode), "decoding the counters");
    auto info = params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
    info.pCounterDataImage = set.data.data();
    info.counterDataImageSize = set.data.size();
    check(cuptiRangeProfilerGetCounterDataInfo(&info), "counting the decoded ranges");
    if (info.numTotalRanges != pending_.size()) {
      // Which range is which launch is not known: none is reported, and
      // their signatures are measured again at their next launch.
      mismatched_ += pending_.size();
      for (const Pending& p : pending_)
        if (auto it = seen_.find(p.signature); it != seen_.end()) {
          if (&set == &full_ && it->second.full) --it->second.full;
          if (&set == &cache_) it->second.cache = false;
        }
      pending_.clear();
      return;
    }
    std::vector<double> values(set.names.size());
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      auto eval = params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
          CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
      eval.pHostObject = set.host;
      eval.pCounterDataImage = set.data.data();
      eval.counterDataImageSize = set.data.size();
      eval.ppMetricNames = set.names.data();
      eval.numMetrics = set.names.size();
      eval.rangeIndex = i;
      eval.pMetricValues = values.data();
      check(cuptiProfilerHostEvaluateToGpuValues(&eval), "evaluating the counters");
      KernelCounters c = metrics::from_counters(set.index, values);
      c.correlation = pending_[i].correlation;
      c.device = device_;
      c.passes = set.passes;
      emit(c);
      ++(&set == &full_ ? measured_ : remeasured_);
    }
    pending_.clear();
  }

  // The flush kernel's own launch and module load are pasta's work: CUPTI's
  // callbacks skip them (DispatchScope). A failure turns flushing off.
  void flush_l2(CUstream stream) {
    pasta::detail::DispatchScope own;
    try {
      flushes_ += l2_.flush(ctx_, stream);
    } catch (const std::exception& e) {
      flush_cache_ = false;
      flush_error_ = fmt::format(
          "hardware counters: L2 is not flushed before measured launches ({}): a kernel's DRAM "
          "bytes and hit rates include what earlier kernels left in L2",
          e.what());
      pasta::detail::log(flush_error_);
    }
  }

  void teardown() {
    if (object_) {
      if (running_) (void)stop();
      auto off = params<CUpti_RangeProfiler_Disable_Params>(
          CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
      off.pRangeProfilerObject = object_;
      (void)cuptiRangeProfilerDisable(&off);
      object_ = nullptr;
    }
    release(full_);
    release(cache_);
    if (profiler_initialized_) {
      auto off = params<CUpti_Profiler_DeInitialize_Params>(
          CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE);
      (void)cuptiProfilerDeInitialize(&off);
      profiler_initialized_ = false;
    }
    running_ = false;
    failed_ = true;  // nothing is measured after the end
  }

  void fail(const std::string& why) {
    error_ = fmt::format("hardware counters: {}; launches from here on are not measured", why);
    pasta::detail::log(error_);
    pending_.clear();
    teardown();
  }

  std::mutex mutex_;
  MetricSet full_, cache_;      // every metric; the cache-sensitive ones alone
  MetricSet* armed_ = nullptr;  // the set of the image being filled
  MetricSet* sized_ = nullptr;  // the set object_ was enabled for
  CUcontext ctx_ = nullptr;
  std::uint32_t device_ = 0;
  CUpti_RangeProfiler_Object* object_ = nullptr;
  struct Pending {
    std::uint64_t correlation, signature;
  };
  std::vector<Pending> pending_;  // the launches of the ranges in the image, in order
  bool profiler_initialized_ = false, running_ = false, failed_ = false, flush_cache_ = true;
  L2Flush l2_;
  std::uint64_t flushes_ = 0;
  std::string flush_error_;
  std::uint64_t per_signature_ = 1;
  struct Seen {
    std::uint64_t full = 0;  // launches measured with every metric
    bool cache = false;      // one measured for the cache-sensitive metrics alone
  };
  std::unordered_map<std::uint64_t, Seen> seen_;  // per signature
  std::uint64_t measured_ = 0, remeasured_ = 0, skipped_ = 0, other_context_ = 0, mismatched_ = 0;
  std::string error_;
};

}  // namespace pasta::nv::detail
