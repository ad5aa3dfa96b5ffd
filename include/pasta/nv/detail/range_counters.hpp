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
#pragma once

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/metrics.hpp>
#include <pasta/nv/detail/cupti_api.hpp>

namespace pasta::nv::detail {

class RangeCounters {
 public:
  // Ranges decoded at a time: the counter-data image holds this many.
  static constexpr std::size_t ranges_per_image = 64;

  RangeCounters() {
    for (std::size_t i = 0; i < metrics::counters.size(); ++i)
      names_[i] = metrics::counters[i].name.data();
  }
  RangeCounters(const RangeCounters&) = delete;
  RangeCounters& operator=(const RangeCounters&) = delete;

  // Launches of one signature measured (0: all); the rest run unmeasured.
  void set_per_signature(std::uint64_t n) { per_signature_ = n; }

  // On the launching thread, before the launch API runs: returns whether the
  // launch is measured. `signature` names (kernel, grid, block, operator
  // path). after() must follow on the same thread.
  template <class Emit>
  bool before(CUcontext ctx, std::uint64_t correlation, std::uint64_t signature, Emit&& emit) {
    mutex_.lock();
    if (failed_ || !ctx) return false;
    try {
      if (!ctx_) enable(ctx);
      if (ctx != ctx_) {
        ++other_context_;
        return false;
      }
      std::uint64_t& seen = seen_[signature];
      if (per_signature_ && seen >= per_signature_) {
        ++skipped_;
        // Profiling stays off until a launch to measure: this one runs as is.
        if (running_) drain(emit);
        return false;
      }
      ++seen;
      if (!running_) arm();
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
  }

  std::uint64_t measured() const { return measured_; }
  std::uint64_t skipped() const { return skipped_; }
  std::uint64_t other_context() const { return other_context_; }
  std::uint64_t mismatched() const { return mismatched_; }
  std::uint32_t passes() const { return passes_; }
  const std::string& error() const { return error_; }

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

    auto host = params<CUpti_Profiler_Host_Initialize_Params>(
        CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    host.pChipName = chip.pChipName;
    host.pCounterAvailabilityImage = availability.data();
    check(cuptiProfilerHostInitialize(&host), "initialising the profiler host");
    host_ = host.pHostObject;

    auto add = params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    add.pHostObject = host_;
    add.ppMetricNames = names_.data();
    add.numMetrics = names_.size();
    check(cuptiProfilerHostConfigAddMetrics(&add),
          "adding the metrics (an unknown metric name for this GPU?)");
    auto size = params<CUpti_Profiler_Host_GetConfigImageSize_Params>(
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
    size.pHostObject = host_;
    check(cuptiProfilerHostGetConfigImageSize(&size), "sizing the config image");
    config_.resize(size.configImageSize);
    auto image = params<CUpti_Profiler_Host_GetConfigImage_Params>(
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
    image.pHostObject = host_;
    image.pConfigImage = config_.data();
    image.configImageSize = config_.size();
    check(cuptiProfilerHostGetConfigImage(&image), "building the config image");
    auto passes = params<CUpti_Profiler_Host_GetNumOfPasses_Params>(
        CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
    passes.pConfigImage = config_.data();
    passes.configImageSize = config_.size();
    check(cuptiProfilerHostGetNumOfPasses(&passes), "counting the replay passes");
    passes_ = static_cast<std::uint32_t>(passes.numOfPasses);

    auto on =
        params<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
    on.ctx = ctx;
    check(cuptiRangeProfilerEnable(&on), "enabling the range profiler");
    object_ = on.pRangeProfilerObject;
    ctx_ = ctx;

    auto data = params<CUpti_RangeProfiler_GetCounterDataSize_Params>(
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
    data.pRangeProfilerObject = object_;
    data.pMetricNames = names_.data();
    data.numMetrics = names_.size();
    data.maxNumOfRanges = ranges_per_image;
    data.maxNumRangeTreeNodes = ranges_per_image;
    check(cuptiRangeProfilerGetCounterDataSize(&data), "sizing the counter-data image");
    counter_data_.resize(data.counterDataSize);
  }

  // A fresh counter-data image, the configuration, and profiling started.
  void arm() {
    std::fill(counter_data_.begin(), counter_data_.end(), std::uint8_t{0});
    auto init = params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    init.pRangeProfilerObject = object_;
    init.pCounterData = counter_data_.data();
    init.counterDataSize = counter_data_.size();
    check(cuptiRangeProfilerCounterDataImageInitialize(&init),
          "initialising the counter-data image");
    auto set = params<CUpti_RangeProfiler_SetConfig_Params>(
        CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
    set.pRangeProfilerObject = object_;
    set.pConfig = config_.data();
    set.configSize = config_.size();
    set.pCounterDataImage = counter_data_.data();
    set.counterDataImageSize = counter_data_.size();
    set.range = CUPTI_AutoRange;
    set.replayMode = CUPTI_KernelReplay;
    set.maxRangesPerPass = ranges_per_image;
    set.numNestingLevels = 1;
    set.minNestingLevel = 1;
    set.passIndex = 0;
    set.targetNestingLevel = 1;
    check(cuptiRangeProfilerSetConfig(&set), "configuring the range profiler");
    auto start =
        params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
    start.pRangeProfilerObject = object_;
    check(cuptiRangeProfilerStart(&start), "starting the range profiler");
    running_ = true;
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
    auto decode = params<CUpti_RangeProfiler_DecodeData_Params>(
        CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
    decode.pRangeProfilerObject = object_;
    check(cuptiRangeProfilerDecodeData(&decode), "decoding the counters");
    auto info = params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
    info.pCounterDataImage = counter_data_.data();
    info.counterDataImageSize = counter_data_.size();
    check(cuptiRangeProfilerGetCounterDataInfo(&info), "counting the decoded ranges");
    if (info.numTotalRanges != pending_.size()) {
      // Which range is which launch is not known: none is reported, and
      // their signatures are measured again at their next launch.
      mismatched_ += pending_.size();
      for (const Pending& p : pending_)
        if (auto it = seen_.find(p.signature); it != seen_.end() && it->second) --it->second;
      pending_.clear();
      return;
    }
    std::array<double, metrics::counters.size()> values{};
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      auto eval = params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
          CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
      eval.pHostObject = host_;
      eval.pCounterDataImage = counter_data_.data();
      eval.counterDataImageSize = counter_data_.size();
      eval.ppMetricNames = names_.data();
      eval.numMetrics = names_.size();
      eval.rangeIndex = i;
      eval.pMetricValues = values.data();
      check(cuptiProfilerHostEvaluateToGpuValues(&eval), "evaluating the counters");
      KernelCounters c{
          .correlation = pending_[i].correlation, .device = device_, .passes = passes_};
      metrics::fill(c, values);
      emit(c);
      ++measured_;
    }
    pending_.clear();
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
    if (host_) {
      auto off = params<CUpti_Profiler_Host_Deinitialize_Params>(
          CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
      off.pHostObject = host_;
      (void)cuptiProfilerHostDeinitialize(&off);
      host_ = nullptr;
    }
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
  std::array<const char*, metrics::counters.size()> names_{};
  CUcontext ctx_ = nullptr;
  std::uint32_t device_ = 0, passes_ = 0;
  CUpti_Profiler_Host_Object* host_ = nullptr;
  CUpti_RangeProfiler_Object* object_ = nullptr;
  std::vector<std::uint8_t> config_, counter_data_;
  struct Pending {
    std::uint64_t correlation, signature;
  };
  std::vector<Pending> pending_;  // the launches of the ranges in the image, in order
  bool profiler_initialized_ = false, running_ = false, failed_ = false;
  std::uint64_t per_signature_ = 1;
  std::unordered_map<std::uint64_t, std::uint64_t> seen_;  // launches measured per signature
  std::uint64_t measured_ = 0, skipped_ = 0, other_context_ = 0, mismatched_ = 0;
  std::string error_;
};

}  // namespace pasta::nv::detail
