// What the GPU programs of bench/gpu/probe share: the CUDA error check, the
// L2 flush kernel, a clock, and the Range Profiler on a context (a metric
// set's config image for the device, images armed, decoded and evaluated);
// range_host.hpp holds the host side and pasta's metric set. They build
// alone with nvcc (C++17, no pasta headers): run.sh and each program's
// comment say how.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "range_host.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#define CR(x)                                                   \
  do {                                                          \
    cudaError_t r_ = (x);                                       \
    if (r_ != cudaSuccess) {                                    \
      std::printf("FAIL %s: %s\n", #x, cudaGetErrorString(r_)); \
      std::exit(1);                                             \
    }                                                           \
  } while (0)

// Reads a buffer twice L2's size: L2 written back and filled with clean lines.
__global__ void flush(const int4* buf, size_t n, int* sink) {
  int x = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    int4 v = buf[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x5a17c0de) *sink = x;
}

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The host side of the Range Profiler for `names` on `ctx`'s device.
inline HostConfig host_config(CUcontext ctx, const char** names, int nm) {
  auto init = prm<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
  CK(cuptiProfilerInitialize(&init));
  auto chip = prm<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  CK(cuptiDeviceGetChipName(&chip));
  auto av = prm<CUpti_Profiler_GetCounterAvailability_Params>(
      CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
  av.ctx = ctx;
  CK(cuptiProfilerGetCounterAvailability(&av));
  std::vector<uint8_t> avail(av.counterAvailabilityImageSize);
  av.pCounterAvailabilityImage = avail.data();
  CK(cuptiProfilerGetCounterAvailability(&av));
  return config_image(chip.pChipName, avail.data(), names, nm);
}

// A fresh counter-data image `data` for `obj`, configured for `hc`'s config
// image: auto or user ranges, user or kernel replay.
inline void arm(CUpti_RangeProfiler_Object* obj, const HostConfig& hc, std::vector<uint8_t>& data,
                CUpti_ProfilerRange range, CUpti_ProfilerReplayMode replay, size_t max_ranges) {
  std::fill(data.begin(), data.end(), 0);
  auto di = prm<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
  di.pRangeProfilerObject = obj;
  di.pCounterData = data.data();
  di.counterDataSize = data.size();
  CK(cuptiRangeProfilerCounterDataImageInitialize(&di));
  auto sc =
      prm<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
  sc.pRangeProfilerObject = obj;
  sc.pConfig = hc.config.data();
  sc.configSize = hc.config.size();
  sc.pCounterDataImage = data.data();
  sc.counterDataImageSize = data.size();
  sc.range = range;
  sc.replayMode = replay;
  sc.maxRangesPerPass = max_ranges;
  sc.numNestingLevels = 1;
  sc.minNestingLevel = 1;
  sc.passIndex = 0;
  sc.targetNestingLevel = 1;
  CK(cuptiRangeProfilerSetConfig(&sc));
}

// The profiler's counters decoded into its counter-data image `data`: how
// many ranges the image holds, and how many CUPTI dropped.
struct Decoded {
  size_t ranges, dropped;
};
inline Decoded decode(CUpti_RangeProfiler_Object* obj, std::vector<uint8_t>& data) {
  auto dd =
      prm<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
  dd.pRangeProfilerObject = obj;
  CK(cuptiRangeProfilerDecodeData(&dd));
  auto info = prm<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
      CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
  info.pCounterDataImage = data.data();
  info.counterDataImageSize = data.size();
  CK(cuptiRangeProfilerGetCounterDataInfo(&info));
  return {info.numTotalRanges, dd.numOfRangeDropped};
}
// The values of `names` in range `range` of the image `data`.
inline std::vector<double> evaluate(const HostConfig& hc, std::vector<uint8_t>& data,
                                    const char** names, int nm, size_t range) {
  std::vector<double> v(nm);
  auto ev = prm<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
      CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
  ev.pHostObject = hc.host;
  ev.pCounterDataImage = data.data();
  ev.counterDataImageSize = data.size();
  ev.ppMetricNames = names;
  ev.numMetrics = nm;
  ev.rangeIndex = range;
  ev.pMetricValues = v.data();
  CK(cuptiProfilerHostEvaluateToGpuValues(&ev));
  return v;
}
