// How many replay passes a metric set takes on a chip, and what each metric
// adds: CUPTI's profiler host API computes it from the chip's name alone, so
// this runs on any machine with CUPTI, no GPU. For each metric: its passes
// alone, and the set's without it. Build and run, for pasta's metric set
// (range_host.hpp's default_names) on an H100 or H200 (chip GH100):
//   g++ -std=c++20 -o /tmp/passes bench/gpu/probe/passes.cpp
//     -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcupti
//   LD_LIBRARY_PATH=/usr/local/cuda/lib64 /tmp/passes GH100
//     $(grep -o '"[a-z0-9_]*__[^"]*"' bench/gpu/probe/range_host.hpp | tr -d '"')
// (each command on one line).
// Measured on the build machine (2026-11-29, CUDA 13.0's CUPTI, GH100): the
// 20 metrics take 9 passes; sm__throughput.avg.pct_of_peak_sustained_elapsed
// alone takes 8, and the other 19 together 4; every other metric alone takes
// 1 and leaving it out keeps 9. The 20 in 200 shuffled orders (passes() in a
// loop) took 9 each time: one pass more than SM throughput alone takes.
#include <cstdio>
#include <vector>

#include "range_host.hpp"

// The passes `names` take on `chip`.
static size_t passes(const char* chip, std::vector<const char*> names) {
  HostConfig hc = config_image(chip, nullptr, names.data(), names.size());
  release(hc);
  return hc.passes;
}

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
