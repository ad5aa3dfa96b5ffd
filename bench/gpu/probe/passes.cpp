// How many replay passes a metric set takes on a chip, and what each metric
// adds: CUPTI's profiler host API computes it from the chip's name alone, so
// this runs on any machine with CUPTI, no GPU. For each metric: its passes
// alone, and the set's without it. Build and run, for pasta's metric set
// (range_setup.hpp's default_names) on an H100 or H200 (chip GH100):
//   g++ -std=c++20 -o /tmp/passes bench/gpu/probe/passes.cpp
//     -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcupti
//   LD_LIBRARY_PATH=/usr/local/cuda/lib64 /tmp/passes GH100
//     $(grep -o '"[a-z0-9_]*__[^"]*"' bench/gpu/probe/range_setup.hpp | tr -d '"')
// (each command on one line).
// Measured on the build machine (2026-11-29, CUDA 13.0's CUPTI, GH100): the
// 20 metrics take 9 passes; sm__throughput.avg.pct_of_peak_sustained_elapsed
// alone takes 8, and the other 19 together 4; every other metric alone takes
// 1 and leaving it out keeps 9. The 20 in 200 shuffled orders (passes() in a
// loop) took 9 each time: one pass more than SM throughput alone takes.
#include <cupti.h>
#include <cupti_profiler_host.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

template <class P>
P params(size_t size) {
  P p{};
  p.structSize = size;
  return p;
}

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* s = "";
  cuptiGetResultString(r, &s);
  std::fprintf(stderr, "%s: %s\n", what, s);
  std::exit(1);
}

// The passes `names` take on `chip`.
size_t passes(const char* chip, std::vector<const char*> names) {
  auto host = params<CUpti_Profiler_Host_Initialize_Params>(
      CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
  host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  host.pChipName = chip;
  check(cuptiProfilerHostInitialize(&host), "initialising the profiler host");
  auto add = params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
      CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
  add.pHostObject = host.pHostObject;
  add.ppMetricNames = names.data();
  add.numMetrics = names.size();
  check(cuptiProfilerHostConfigAddMetrics(&add), "adding the metrics");
  auto size = params<CUpti_Profiler_Host_GetConfigImageSize_Params>(
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
  size.pHostObject = host.pHostObject;
  check(cuptiProfilerHostGetConfigImageSize(&size), "sizing the config image");
  std::vector<uint8_t> config(size.configImageSize);
  auto image = params<CUpti_Profiler_Host_GetConfigImage_Params>(
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
  image.pHostObject = host.pHostObject;
  image.pConfigImage = config.data();
  image.configImageSize = config.size();
  check(cuptiProfilerHostGetConfigImage(&image), "building the config image");
  auto count = params<CUpti_Profiler_Host_GetNumOfPasses_Params>(
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
  count.pConfigImage = config.data();
  count.configImageSize = config.size();
  check(cuptiProfilerHostGetNumOfPasses(&count), "counting the passes");
  auto off = params<CUpti_Profiler_Host_Deinitialize_Params>(
      CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
  off.pHostObject = host.pHostObject;
  cuptiProfilerHostDeinitialize(&off);
  return count.numOfPasses;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CHIP METRIC...\n", argv[0]);
    return 2;
  }
  const char* chip = argv[1];
  const std::vector<const char*> names(argv + 2, argv + argc);
  std::printf("%zu metrics on %s: %zu passes\n", names.size(), chip, passes(chip, names));
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<const char*> rest;
    for (size_t j = 0; j < names.size(); ++j)
      if (j != i) rest.push_back(names[j]);
    std::printf("  %-66s alone %zu", names[i], passes(chip, {names[i]}));
    if (rest.empty())
      std::printf("\n");
    else
      std::printf(", the others without it %zu\n", passes(chip, rest));
  }
  return 0;
}
