// The host side of the Range Profiler that bench/gpu/probe's programs share:
// the error check, pasta's metric set, and a metric set's config image and
// passes for a chip. Host code alone (no CUDA runtime), so passes.cpp builds
// with a plain C++ compiler; range_setup.hpp adds the device side.
#pragma once

#include <cupti.h>
#include <cupti_profiler_host.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#define CK(x)                              \
  do {                                     \
    CUptiResult r_ = (x);                  \
    if (r_ != CUPTI_SUCCESS) {             \
      const char* s;                       \
      cuptiGetResultString(r_, &s);        \
      std::printf("FAIL %s: %s\n", #x, s); \
      std::exit(1);                        \
    }                                      \
  } while (0)

// pasta's metric set, metrics::counters in include/pasta/core/metrics.hpp, in its order
// (the order decides how CUPTI packs the passes); a CPU test keeps the two equal.
// user_replay.cu's findings of the first three sessions were measured with the set
// before, which asked for lts__t_sector_hit_rate.pct where this asks for L2's three raw
// counts.
inline const char* default_names[] = {
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sectors_lookup_miss.sum",
    "lts__t_sectors.sum",
    "lts__t_sectors_lookup_hit.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.sum",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"};

template <class P>
inline P prm(size_t s) {
  P p{};
  p.structSize = s;
  return p;
}

// A metric set's config image and passes on a chip (its counters'
// availability on the device, or nullptr for the chip's own).
struct HostConfig {
  std::string chip;
  CUpti_Profiler_Host_Object* host = nullptr;
  std::vector<uint8_t> config;  // the config image
  size_t passes = 0;
};
inline HostConfig config_image(const char* chip, const uint8_t* availability, const char** names,
                               size_t nm) {
  auto hi =
      prm<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
  hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  hi.pChipName = chip;
  hi.pCounterAvailabilityImage = availability;
  CK(cuptiProfilerHostInitialize(&hi));
  auto add = prm<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
      CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
  add.pHostObject = hi.pHostObject;
  add.ppMetricNames = names;
  add.numMetrics = nm;
  CK(cuptiProfilerHostConfigAddMetrics(&add));
  auto cs = prm<CUpti_Profiler_Host_GetConfigImageSize_Params>(
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
  cs.pHostObject = hi.pHostObject;
  CK(cuptiProfilerHostGetConfigImageSize(&cs));
  std::vector<uint8_t> config(cs.configImageSize);
  auto ci = prm<CUpti_Profiler_Host_GetConfigImage_Params>(
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
  ci.pHostObject = hi.pHostObject;
  ci.pConfigImage = config.data();
  ci.configImageSize = config.size();
  CK(cuptiProfilerHostGetConfigImage(&ci));
  auto np = prm<CUpti_Profiler_Host_GetNumOfPasses_Params>(
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
  np.pConfigImage = config.data();
  np.configImageSize = config.size();
  CK(cuptiProfilerHostGetNumOfPasses(&np));
  return {chip, hi.pHostObject, std::move(config), np.numOfPasses};
}
// The host object config_image() made, gone.
inline void release(HostConfig& hc) {
  auto off = prm<CUpti_Profiler_Host_Deinitialize_Params>(
      CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
  off.pHostObject = hc.host;
  cuptiProfilerHostDeinitialize(&off);
  hc.host = nullptr;
}
