// CUPTI's Range Profiler for RangeCounters, and nothing of its launch
// policy: metric sets built into config images, the range-profiler object,
// counter-data images armed, profiling started and stopped, ranges decoded.
#pragma once

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/metrics.hpp>
#include <pasta/nv/detail/cupti_api.hpp>

namespace pasta::nv::detail {

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

class RangeProfiler {
 public:
  // Ranges decoded at a time: the counter-data image holds this many.
  static constexpr std::size_t ranges_per_image = 88;

  RangeProfiler() = default;
  RangeProfiler(const RangeProfiler&) = delete;
  RangeProfiler& operator=(const RangeProfiler&) = delete;

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

  // The profiler initialised for `ctx`; the device's chip and the counters
  // available there kept for build(). Returns the device.
  std::uint32_t initialize(CUcontext ctx) {
    auto init =
        params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    check(cuptiProfilerInitialize(&init), "initialising the CUPTI profiler");
    profiler_initialized_ = true;
    check(cuptiGetDeviceId(ctx, &device_), "finding the device of the context");

    auto chip =
        params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
    chip.deviceIndex = device_;
    check(cuptiDeviceGetChipName(&chip), "finding the GPU's chip name");
    chip_ = chip.pChipName;

    auto avail = params<CUpti_Profiler_GetCounterAvailability_Params>(
        CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
    avail.ctx = ctx;
    check(cuptiProfilerGetCounterAvailability(&avail), "asking which counters are available");
    availability_.resize(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = availability_.data();
    check(cuptiProfilerGetCounterAvailability(&avail), "asking which counters are available");
    ctx_ = ctx;
    return device_;
  }

  // The host object, config image and pass count of one set.
  void build(MetricSet& set) {
    auto host = params<CUpti_Profiler_Host_Initialize_Params>(
        CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    host.pChipName = chip_.c_str();
    host.pCounterAvailabilityImage = availability_.data();
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

  // The cache-sensitive metrics in `sets` of one pass each, most wanted
  // first: each (all its counters) goes to the first set it fits in, or
  // starts a set. On GH100 the L2 hit rate's counters take more than one
  // pass, so it is measured in the full set only.
  void build_one_pass_sets(std::vector<MetricSet>& sets, std::size_t max_sets) {
    for (auto field : metrics::cache_sensitive) {
      bool placed = false;
      for (std::size_t k = 0; k <= sets.size() && !placed && k < max_sets; ++k) {
        MetricSet trial;
        if (k < sets.size())
          for (std::size_t i : sets[k].index) trial.add(i);
        for (std::size_t i = 0; i < metrics::counters.size(); ++i)
          if (metrics::counters[i].field == field) trial.add(i);
        build(trial);
        placed = trial.passes == 1;
        if (!placed) {
          release(trial);
        } else if (k < sets.size()) {
          release(sets[k]);  // the larger set replaces it, as built
          sets[k] = std::move(trial);
        } else {
          sets.push_back(std::move(trial));
        }
      }
    }
  }

  static void release(MetricSet& set) {
    if (!set.host) return;
    auto off = params<CUpti_Profiler_Host_Deinitialize_Params>(
        CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
    off.pHostObject = set.host;
    (void)cuptiProfilerHostDeinitialize(&off);
    set.host = nullptr;
  }

  // Whether the range-profiler object is the one enabled for `set`.
  bool uses(const MetricSet& set) const { return object_ && sized_ == &set; }
  // The range profiler, enabled for `set`. Switching sets takes a fresh
  // range profiler object: one object configured for one set and then the
  // other mixed up the two (counts of an earlier launch in a later one, and
  // a PyTorch program that stopped making progress, on an H100).
  void use(MetricSet& set) {
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

  // A fresh counter-data image of `set` (use(set) first) and its
  // configuration, for CUPTI's kernel replay or pasta's user replay.
  void arm(MetricSet& set, bool user_replay) {
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
    config.replayMode = user_replay ? CUPTI_UserReplay : CUPTI_KernelReplay;
    config.maxRangesPerPass = ranges_per_image;
    config.numNestingLevels = 1;
    config.minNestingLevel = 1;
    config.passIndex = 0;
    config.targetNestingLevel = 1;
    check(cuptiRangeProfilerSetConfig(&config), "configuring the range profiler");
    configured_ = &set;
  }
  // The set of the image the range-profiler object fills (nullptr: none yet).
  MetricSet* configured() const { return configured_; }
  bool running() const { return running_; }

  // Profiling on: the configured image takes ranges after those it holds.
  void start() {
    auto p = params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object_;
    check(cuptiRangeProfilerStart(&p), "starting the range profiler");
    running_ = true;
  }
  CUptiResult stop(bool* last_pass = nullptr) {
    auto p = params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object_;
    running_ = false;
    const CUptiResult r = cuptiRangeProfilerStop(&p);
    if (last_pass) *last_pass = p.isAllPassSubmitted != 0;
    return r;
  }

  // The configured image's ranges decoded; how many it holds in all.
  std::size_t decode() {
    MetricSet& set = *configured_;
    auto decode = params<CUpti_RangeProfiler_DecodeData_Params>(
        CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
    decode.pRangeProfilerObject = object_;
    check(cuptiRangeProfilerDecodeData(&decode), "decoding the counters");
    auto info = params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
    info.pCounterDataImage = set.data.data();
    info.counterDataImageSize = set.data.size();
    check(cuptiRangeProfilerGetCounterDataInfo(&info), "counting the decoded ranges");
    return info.numTotalRanges;
  }
  // The values of `set`'s metrics in one decoded range, in `values`.
  static void evaluate(MetricSet& set, std::size_t range, std::vector<double>& values) {
    auto eval = params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
    eval.pHostObject = set.host;
    eval.pCounterDataImage = set.data.data();
    eval.counterDataImageSize = set.data.size();
    eval.ppMetricNames = set.names.data();
    eval.numMetrics = set.names.size();
    eval.rangeIndex = range;
    eval.pMetricValues = values.data();
    check(cuptiProfilerHostEvaluateToGpuValues(&eval), "evaluating the counters");
  }

  // Profiling stopped, the object and the sets' host objects released, the
  // profiler deinitialised. Failures are ignored: this is the end.
  void release(MetricSet& full, std::vector<MetricSet>& cache) {
    if (object_) {
      if (running_) (void)stop();
      auto off = params<CUpti_RangeProfiler_Disable_Params>(
          CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
      off.pRangeProfilerObject = object_;
      (void)cuptiRangeProfilerDisable(&off);
      object_ = nullptr;
    }
    release(full);
    for (MetricSet& set : cache) release(set);
    if (profiler_initialized_) {
      auto off = params<CUpti_Profiler_DeInitialize_Params>(
          CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE);
      (void)cuptiProfilerDeInitialize(&off);
      profiler_initialized_ = false;
    }
    running_ = false;
  }

 private:
  CUcontext ctx_ = nullptr;
  std::uint32_t device_ = 0;
  std::string chip_;
  std::vector<std::uint8_t> availability_;
  CUpti_RangeProfiler_Object* object_ = nullptr;
  MetricSet* configured_ = nullptr;  // the set of the image object_ fills
  MetricSet* sized_ = nullptr;       // the set object_ was enabled for
  bool profiler_initialized_ = false, running_ = false;
};

}  // namespace pasta::nv::detail
