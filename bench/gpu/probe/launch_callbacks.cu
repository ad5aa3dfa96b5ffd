// What CUPTI's API callbacks cost a launch, and which domain's correlation id
// a kernel's activity record carries: the question behind tagging kernels with
// operators from the launch callbacks (nv/cupti/detail/op_tags.hpp enables
// the runtime's and the driver's, so a runtime launch makes four callbacks).
//
//   launch_callbacks MODE [LAUNCHES]
//     none      no CUPTI
//     activity  kernel activity records (CONCURRENT_KERNEL) only
//     rt        activity, and callbacks of the runtime's launch, copy and memset calls
//     drv       activity, and callbacks of the driver's
//     both      activity, and both (what pasta's tagging turns on)
//     map       both; then says, for runtime launches (<<<>>>) and driver
//               launches (cuLaunchKernel), which callback's correlation id the
//               kernel records carry
//     map-drv   the same with the driver's callbacks alone
//     paired    activity; in one process, blocks of 1,000 launches with the
//               callbacks off, runtime's, driver's, both, in turn (CUPTI's
//               cuptiEnableCallback between blocks), 100 rounds: the median
//               of each, and of each block's difference to the round's `off`
//     paired-records  the same way: nothing, kernel records, records and the
//               driver's callbacks, records and both (records switched with
//               cuptiActivityEnable/Disable between blocks)
// Measured on an H200 (driver 580.159.04, CUDA 13.0's CUPTI, 2026-11-30), the
// host time an empty kernel's launch takes more, medians of 100 rounds in one
// process, each process's own (three processes a mode, two machine calls):
//   paired-records  kernel records 304-358 ns; records and the driver's
//                   callbacks 291-356; records and both domains' 458-533
//   paired          (records on) the runtime's callbacks 122-337 ns, the
//                   driver's 18-202, both 181-442
//   map, map-drv    100 of 100 runtime launches' kernel records carry the id
//                   of their driver call's callback, with both domains on and
//                   with the driver's alone; driver launches' likewise
// One process a mode (none, activity, rt, drv, both; 10 rounds) cannot tell
// them apart: the same mode's medians spread 3.3-4.5 us across processes.
// Prints one JSON line: the host time of the launch loop per launch (the
// loop in blocks of 1,000 launches, a synchronisation between blocks, not
// timed), its median over the blocks. Build and run on the GPU machine:
//   nvcc -std=c++17 -arch=sm_90 -o /tmp/lcb bench/gpu/probe/launch_callbacks.cu \
//     -I$CUPTI_INC -L$CUPTI_LIB -lcupti -lcuda
//   for r in $(seq 10); do for m in none activity rt drv both; do /tmp/lcb $m; done; done
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include "api_probe.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

__global__ void empty() {}

namespace {

using probe::buffer_requested;
using probe::makes_device_work;
using probe::median;

// The callbacks' ids at their entry, by domain; kernel records' ids.
std::vector<std::uint32_t> runtime_ids, driver_ids, kernel_ids;
bool mapping = false;
thread_local std::uint32_t last_id = 0;  // what a tag would keep: the cheapest callback

void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  last_id = cb->correlationId;
  if (mapping) (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_ids : driver_ids).push_back(last_id);
}

void enable(CUpti_SubscriberHandle s, CUpti_CallbackDomain domain, std::uint32_t size,
            std::uint32_t on = 1) {
  for (std::uint32_t cbid = 1; cbid < size; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name && makes_device_work(name))
      cuptiEnableCallback(on, s, domain, cbid);
  }
}
void set_domains(CUpti_SubscriberHandle s, bool runtime, bool driver) {
  enable(s, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, runtime);
  enable(s, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, driver);
}

// The host time of 1,000 launches, ns a launch (the synchronisation after, not timed).
double block() {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) empty<<<1, 32>>>();
  const auto t1 = std::chrono::steady_clock::now();
  CHECK(cudaDeviceSynchronize());
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / 1000;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
      kernel_ids.push_back(reinterpret_cast<CUpti_ActivityKernel9*>(record)->correlationId);
  std::free(buffer);
}

// How many of `kernels` are among `ids`.
std::size_t found(const std::vector<std::uint32_t>& kernels, std::vector<std::uint32_t> ids) {
  std::sort(ids.begin(), ids.end());
  std::size_t n = 0;
  for (std::uint32_t k : kernels) n += std::binary_search(ids.begin(), ids.end(), k);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "none";
  const int launches = argc > 2 ? std::atoi(argv[2]) : 50000;
  const bool activity = mode != "none";
  const bool paired = mode == "paired", records_paired = mode == "paired-records";
  const bool rt = mode == "rt" || mode == "both" || mode == "map" || paired || records_paired;
  const bool drv = mode == "drv" || mode == "both" || mode == "map" || mode == "map-drv" || paired ||
                   records_paired;
  mapping = mode == "map" || mode == "map-drv";
  if (activity) {
    CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  }
  CUpti_SubscriberHandle subscriber{};
  if (rt || drv) {
    CHECK(cuptiSubscribe(&subscriber, on_api, nullptr));
    if (rt) enable(subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
    if (drv) enable(subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
  }
  for (int i = 0; i < 2000; ++i) empty<<<1, 32>>>();  // module load, first launches
  CHECK(cudaDeviceSynchronize());

  if (mapping) {
    // 100 runtime launches, then 100 driver launches of the same kernel.
    runtime_ids.clear(), driver_ids.clear();
    CHECK(cuptiActivityFlushAll(1));
    kernel_ids.clear();
    for (int i = 0; i < 100; ++i) empty<<<1, 32>>>();
    CHECK(cudaDeviceSynchronize());
    CHECK(cuptiActivityFlushAll(1));
    const auto runtime_kernels = kernel_ids;
    const auto rt_ids = runtime_ids, drv_nested = driver_ids;
    runtime_ids.clear(), driver_ids.clear(), kernel_ids.clear();
    cudaFunction_t f{};
    CHECK(cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(&empty)));
    for (int i = 0; i < 100; ++i)
      CHECK(cuLaunchKernel(reinterpret_cast<CUfunction>(f), 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr,
                           nullptr));
    CHECK(cudaDeviceSynchronize());
    CHECK(cuptiActivityFlushAll(1));
    std::printf(
        "{\"mode\": \"%s\", \"runtime_launches\": {\"kernels\": %zu, \"runtime_callbacks\": %zu, "
        "\"driver_callbacks\": %zu, \"kernel_ids_of_runtime\": %zu, \"kernel_ids_of_driver\": %zu}, "
        "\"driver_launches\": {\"kernels\": %zu, \"runtime_callbacks\": %zu, \"driver_callbacks\": "
        "%zu, \"kernel_ids_of_driver\": %zu}}\n",
        mode.c_str(), runtime_kernels.size(), rt_ids.size(), drv_nested.size(), found(runtime_kernels, rt_ids),
        found(runtime_kernels, drv_nested), kernel_ids.size(), runtime_ids.size(),
        driver_ids.size(), found(kernel_ids, driver_ids));
    return 0;
  }

  if (paired || records_paired) {
    // Each configuration's block time, and its difference to the round's first.
    struct Setting {
      const char* name;
      bool records, runtime, driver;
    };
    const std::vector<Setting> settings =
        paired ? std::vector<Setting>{{"off", true, false, false},
                                      {"runtime", true, true, false},
                                      {"driver", true, false, true},
                                      {"both", true, true, true}}
               : std::vector<Setting>{{"nothing", false, false, false},
                                      {"records", true, false, false},
                                      {"records_driver", true, false, true},
                                      {"records_both", true, true, true}};
    std::vector<std::vector<double>> t(settings.size()), diff(settings.size());
    bool records_on = true;
    for (int round = 0; round < 100; ++round) {
      double first = 0;
      for (std::size_t c = 0; c < settings.size(); ++c) {
        const Setting& set = settings[c];
        if (set.records != records_on) {
          records_on = set.records;
          CHECK(records_on ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                           : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        }
        set_domains(subscriber, set.runtime, set.driver);
        const double ns = block();
        if (c == 0) first = ns;
        t[c].push_back(ns);
        diff[c].push_back(ns - first);
      }
    }
    std::printf("{\"mode\": \"%s\"", mode.c_str());
    for (std::size_t c = 0; c < settings.size(); ++c)
      std::printf(", \"%s\": {\"ns_per_launch\": %.1f, \"over_first\": %.1f}",
                  settings[c].name, median(t[c]), median(diff[c]));
    std::printf("}\n");
    return 0;
  }

  std::vector<double> per_launch;
  for (int done = 0; done < launches; done += 1000) per_launch.push_back(block());
  if (activity) CHECK(cuptiActivityFlushAll(1));
  std::printf("{\"mode\": \"%s\", \"ns_per_launch\": %.1f, \"blocks\": %zu, \"kernel_records\": %zu}\n",
              mode.c_str(), median(per_launch), per_launch.size(), kernel_ids.size());
  return 0;
}
