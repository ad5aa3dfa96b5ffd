// What one read of each host clock pasta could stamp host events with costs
// on this machine: CLOCK_MONOTONIC (pasta's steady clock), CUPTI's timestamp
// (the clock pasta stamps host events with under nv::Cupti, so they line up
// with device records) and the CPU's time-stamp counter. On a machine whose
// kernel clock source has no fast user-space read, the first two are system
// calls. Prints the clock source and one JSON line; a benchmark, not a test.
//
//   pasta_bench_host_clock [READS]
#include <cupti.h>
#include <x86intrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

namespace {

template <class Read>
double ns_per_read(long reads, Read read) {
  std::vector<double> ns;
  for (int round = 0; round < 7; ++round) {
    std::uint64_t sink = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < reads; ++i) sink += read();
    const auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                 static_cast<double>(reads));
    if (sink == 42) std::puts("");  // keeps the reads
  }
  std::nth_element(ns.begin(), ns.begin() + 3, ns.end());
  return ns[3];
}

}  // namespace

int main(int argc, char** argv) {
  const long reads = argc > 1 ? std::atol(argv[1]) : 1'000'000;
  std::string source = "?";
  std::ifstream("/sys/devices/system/clocksource/clocksource0/current_clocksource") >> source;
  const double mono = ns_per_read(reads, [] {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_nsec);
  });
  const double cupti = ns_per_read(reads, [] {
    std::uint64_t t = 0;
    cuptiGetTimestamp(&t);
    return t;
  });
  const double tsc = ns_per_read(reads, [] { return static_cast<std::uint64_t>(__rdtsc()); });
  std::printf(
      "{\"clocksource\": \"%s\", \"clock_monotonic_ns\": %.1f, \"cupti_timestamp_ns\": %.1f, "
      "\"rdtsc_ns\": %.1f}\n",
      source.c_str(), mono, cupti, tsc);
  return 0;
}
