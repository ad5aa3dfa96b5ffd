// What CUPTI, attached as pasta's pipelines attach it, adds to the CUDA calls
// a PyTorch step makes (bench/gpu/probe/api_census.cpp counts them), one call
// at a time: the question behind the default pipeline's 7% on a GPT-2 step,
// where kernel records explain about 1% (docs/benchmarks.md).
//
//   api_cost MODE
//     none     no CUPTI: each call's host time, blocks of 1,000 calls, the
//              median of 50 blocks
//     FEATURE+FEATURE...  the same with CUPTI set up so first, one process:
//       register  activity buffers registered (cuptiActivityRegisterCallbacks)
//       subscribe a callback subscriber (cuptiSubscribe)
//       kernels   kernel records enabled (and buffers registered)
//       kinds     the default pipeline's record kinds (`default` below)
//       memcpy, memset, memory, syncs, contexts  one of them: MEMCPY and
//                 MEMCPY2, MEMSET, MEMORY2, SYNCHRONIZATION, CONTEXT
//       sync      (subscribed) the callbacks of device-wide synchronisations
//       profiler  (subscribed) the driver's cuProfilerStart/Stop callbacks
//       module    (subscribed) the resource domain's module-loaded callback
//       nvtx      (subscribed) the NVTX domain
//       pinned    (with records) CUPTI's device-side record buffers in pinned host memory
//                 (CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED)
//       off       every callback enabled above disabled again before the timing
//       detach    after 1,000 launches, everything disabled and flushed,
//                 unsubscribed and cuptiFinalize before the timing
//     paired   in one process, CUPTI subscribed, blocks of each call under
//              each setting in turn, 50 rounds; each setting's median and its
//              median difference to the round's `attached` block:
//                attached  subscribed, nothing enabled
//                kernels   kernel records (CONCURRENT_KERNEL)
//                default   the default pipeline's record kinds: kernels,
//                          copies (MEMCPY, MEMCPY2), memsets, allocations
//                          (MEMORY2), synchronisations, contexts
//                sync      default, and the callbacks of device-wide
//                          synchronisations (pasta's flush at them)
//                torch     sync, and the driver's callbacks of every call that
//                          makes device work and the runtime's of copies and
//                          memsets (`--torch`'s operator tags)
// Prints one JSON line: {call: {setting: {"ns": median, "over_attached": median}}}, and
// "gpu_ns_per_kernel": the device's time for 1,000 empty kernels queued behind a 20 ms
// one (so the host's launches are not what it waits for), median of 20 blocks: what the
// setting costs each kernel on the GPU; "launch_256_kernels_ns", a launch's host time, each
// timed alone, 256 different kernels in turn, and the same with 1 MiB of other memory read
// before each launch (not timed), as an interpreter's work between launches leaves the caches.
// Measured on an H200 (driver 580.159.04, CUDA 13.0's CUPTI, 2026-11-30; the
// whole table in docs/benchmarks.md): synchronization records slow every call
// by about 180 ns (cudaGetDevice 38 -> 215 ns, cuCtxGetCurrent 12 -> 102) and
// keep doing so after they are disabled, until CUPTI is detached (`paired`:
// 223-233 ns with nothing enabled); kernel records cost a launch about 0.4 us
// on the host and an empty kernel 0.36 us on the device (1,396 -> 1,760 ns);
// callbacks (device-wide synchronisations, cuProfilerStart/Stop, module
// loads, NVTX) leave the other calls as they were. With 256 kernels launched in
// turn, kernel records cost a launch 1.0-1.2 us, and 1.8-2.1 us after 1 MiB of
// other memory is read before each launch; pinned record buffers do not help.
//   nvcc -std=c++17 -arch=sm_90 -o /tmp/api_cost bench/gpu/probe/api_cost.cu \
//     -I$CUPTI_INC -L$CUPTI_LIB -lcupti -lcuda
//   for r in 1 2 3 4; do for m in none kernels kernels+syncs kernels+sync; do /tmp/api_cost $m; done; done
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
#include <utility>
#include <vector>

__global__ void empty() {}
// 256 kernels of their own names, as a PyTorch step launches many different ones.
template <int N>
__global__ void many() {}
template <std::size_t... I>
std::vector<const void*> kernel_table(std::index_sequence<I...>) {
  return {reinterpret_cast<const void*>(&many<static_cast<int>(I)>)...};
}
__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

namespace {

using probe::buffer_requested;
using probe::makes_device_work;
using probe::median;

cudaStream_t stream{};
cudaEvent_t event{};
void* device_buffer = nullptr;

// The calls timed: what PyTorch's operators make around their kernels.
struct Call {
  const char* name;
  void (*run)();
};
const Call calls[] = {
    {"cudaGetDevice", [] { int d; cudaGetDevice(&d); }},
    {"cudaSetDevice", [] { cudaSetDevice(0); }},
    {"cudaGetLastError", [] { cudaGetLastError(); }},
    {"cudaStreamIsCapturing", [] { cudaStreamCaptureStatus s; cudaStreamIsCapturing(stream, &s); }},
    {"cudaStreamGetCaptureInfo",
     [] {
       cudaStreamCaptureStatus s;
       unsigned long long id;
       cudaStreamGetCaptureInfo(stream, &s, &id);
     }},
    {"cudaEventRecord", [] { cudaEventRecord(event, stream); }},
    {"cudaEventQuery", [] { cudaEventQuery(event); }},
    {"cudaStreamWaitEvent", [] { cudaStreamWaitEvent(stream, event, 0); }},
    {"cudaLaunchKernel", [] { empty<<<1, 32, 0, stream>>>(); }},
    {"cudaMemsetAsync", [] { cudaMemsetAsync(device_buffer, 0, 64, stream); }},
    {"cudaMemcpyAsync", [] {
       cudaMemcpyAsync(static_cast<char*>(device_buffer) + 64, device_buffer, 64,
                       cudaMemcpyDeviceToDevice, stream);
     }},
    {"cuCtxGetCurrent", [] { CUcontext c; cuCtxGetCurrent(&c); }},
};

// ns a call over 1,000 calls (the synchronisation after, not timed).
double block(const Call& call) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) call.run();
  const auto t1 = std::chrono::steady_clock::now();
  CHECK(cudaStreamSynchronize(stream));
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / 1000;
}
// ns a launch of 1,000, each timed alone, the kernel one of 256 in turn; with
// `evict` bytes of a large buffer read before each launch (not timed), as an
// interpreter's work between two launches leaves the caches.
double launches_apart(const std::vector<const void*>& kernels, std::size_t evict) {
  static std::vector<unsigned char> buffer(256u << 20, 1);
  static std::size_t at = 0;
  static volatile unsigned sink = 0;
  double ns = 0;
  for (int i = 0; i < 1000; ++i) {
    unsigned sum = 0;
    for (std::size_t b = 0; b < evict; b += 64, at = (at + 64) % buffer.size()) sum += buffer[at];
    sink = sink + sum;
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(cudaLaunchKernel(kernels[static_cast<std::size_t>(i) % kernels.size()], dim3(1),
                           dim3(32), nullptr, 0, stream));
    ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  }
  CHECK(cudaStreamSynchronize(stream));
  return ns / 1000;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) {
  std::free(buffer);
}
void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// --torch's tags: the driver's device-work calls, the runtime's copies and memsets.
void tags(CUpti_SubscriberHandle s, std::uint32_t on) {
  for (auto [domain, size] : {std::pair{CUPTI_CB_DOMAIN_RUNTIME_API,
                                        std::uint32_t{CUPTI_RUNTIME_TRACE_CBID_SIZE}},
                              std::pair{CUPTI_CB_DOMAIN_DRIVER_API,
                                        std::uint32_t{CUPTI_DRIVER_TRACE_CBID_SIZE}}})
    for (std::uint32_t cbid = 1; cbid < size; ++cbid) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name ||
          !makes_device_work(name))
        continue;
      if (domain == CUPTI_CB_DOMAIN_DRIVER_API || std::strncmp(name, "cudaMemcpy", 10) == 0 ||
          std::strncmp(name, "cudaMemset", 10) == 0)
        cuptiEnableCallback(on, s, domain, cbid);
    }
}
// Device-wide synchronisations, as sync_callbacks.hpp enables them for the flush.
void sync_callbacks(CUpti_SubscriberHandle s, std::uint32_t on) {
  for (auto [domain, cbid] :
       {std::pair{CUPTI_CB_DOMAIN_RUNTIME_API, CUpti_CallbackId{CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020}},
        std::pair{CUPTI_CB_DOMAIN_DRIVER_API, CUpti_CallbackId{CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize}}})
    cuptiEnableCallback(on, s, domain, cbid);
}

const CUpti_ActivityKind default_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_MEMORY2,           CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_CONTEXT};

// Turns the record kinds and callbacks of setting `level` (0 attached .. 4 torch) on, the others off.
void apply(CUpti_SubscriberHandle s, int level) {
  for (CUpti_ActivityKind kind : default_kinds) {
    const bool on = kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? level >= 1 : level >= 2;
    on ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
  }
  sync_callbacks(s, level >= 3);
  tags(s, level >= 4);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "none";
  if (("+" + mode + "+").find("+pinned+") != std::string::npos) {  // before the context
    std::uint8_t pinned = 1;
    std::size_t size = sizeof pinned;
    CHECK(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, &size,
                                    &pinned));
  }
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  CHECK(cudaMalloc(&device_buffer, 4096));
  const char* settings[] = {"attached", "kernels", "default", "sync", "torch"};
  const int levels = mode == "paired" ? 5 : 1;
  CUpti_SubscriberHandle subscriber{};
  const bool paired = mode == "paired";
  auto has = [&](const char* feature) {
    return ("+" + mode + "+").find("+" + std::string(feature) + "+") != std::string::npos;
  };
  const std::pair<const char*, std::vector<CUpti_ActivityKind>> single_kinds[] = {
      {"memcpy", {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2}},
      {"memset", {CUPTI_ACTIVITY_KIND_MEMSET}},
      {"memory", {CUPTI_ACTIVITY_KIND_MEMORY2}},
      {"syncs", {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION}},
      {"contexts", {CUPTI_ACTIVITY_KIND_CONTEXT}}};
  bool single = false;
  for (const auto& [name, kinds] : single_kinds) single |= has(name);
  const bool records = paired || has("kernels") || has("kinds") || single;
  const bool callbacks = has("sync") || has("profiler") || has("module") || has("nvtx");
  if (records || has("register"))
    CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  if (paired || callbacks || has("subscribe")) CHECK(cuptiSubscribe(&subscriber, on_api, nullptr));
  if (has("kernels")) CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  if (has("kinds"))
    for (CUpti_ActivityKind kind : default_kinds) CHECK(cuptiActivityEnable(kind));
  for (const auto& [name, kinds] : single_kinds)
    if (has(name))
      for (CUpti_ActivityKind kind : kinds) CHECK(cuptiActivityEnable(kind));
  auto set_callbacks = [&](std::uint32_t on) {
    if (has("sync")) sync_callbacks(subscriber, on);
    if (has("profiler"))
      for (CUpti_CallbackId id :
           {CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop})
        CHECK(cuptiEnableCallback(on, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id));
    if (has("module"))
      CHECK(cuptiEnableCallback(on, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                CUPTI_CBID_RESOURCE_MODULE_LOADED));
    if (has("nvtx")) CHECK(cuptiEnableDomain(on, subscriber, CUPTI_CB_DOMAIN_NVTX));
  };
  set_callbacks(1);
  if (has("off")) set_callbacks(0);
  if (has("detach")) {
    for (int i = 0; i < 1000; ++i) empty<<<1, 32, 0, stream>>>();
    CHECK(cudaStreamSynchronize(stream));
    set_callbacks(0);
    for (CUpti_ActivityKind kind : default_kinds) cuptiActivityDisable(kind);
    CHECK(cuptiActivityFlushAll(1));
    if (subscriber) CHECK(cuptiUnsubscribe(subscriber));
    CHECK(cuptiFinalize());
  }
  for (const Call& call : calls) block(call);  // first calls, module load
  std::vector<std::vector<std::vector<double>>> t(std::size(calls)),
      diff(std::size(calls));
  for (auto* v : {&t, &diff})
    for (auto& per_call : *v) per_call.resize(levels);
  for (int round = 0; round < 50; ++round)
    for (int level = 0; level < levels; ++level) {
      if (paired) apply(subscriber, level);
      for (std::size_t c = 0; c < std::size(calls); ++c) {
        const double ns = block(calls[c]);
        t[c][level].push_back(ns);
        diff[c][level].push_back(ns - (level ? t[c][0].back() : ns));
      }
    }
  if (paired) apply(subscriber, 0);
  if (records && !has("detach")) CHECK(cuptiActivityFlushAll(1));
  std::printf("{\"mode\": \"%s\"", mode.c_str());
  for (std::size_t c = 0; c < std::size(calls); ++c) {
    std::printf(", \"%s\": {", calls[c].name);
    for (int level = 0; level < levels; ++level)
      std::printf("%s\"%s\": {\"ns\": %.1f, \"over_attached\": %.1f}", level ? ", " : "",
                  paired ? settings[level] : mode.c_str(), median(t[c][level]),
                  median(diff[c][level]));
    std::printf("}");
  }
  // The device's own time per kernel: 1,000 empty kernels queued behind a long one.
  std::vector<double> gpu;
  cudaEvent_t e0{}, e1{};
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  int rate_khz = 0;
  CHECK(cudaDeviceGetAttribute(&rate_khz, cudaDevAttrClockRate, 0));
  for (int b = 0; b < 20; ++b) {
    spin<<<1, 1, 0, stream>>>(20LL * rate_khz);  // about 20 ms
    CHECK(cudaEventRecord(e0, stream));
    for (int i = 0; i < 1000; ++i) empty<<<1, 32, 0, stream>>>();
    CHECK(cudaEventRecord(e1, stream));
    CHECK(cudaStreamSynchronize(stream));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    gpu.push_back(ms * 1e6 / 1000);
  }
  // Launches of many kernels, with the caches warm and after 1 MiB read.
  const auto kernels = kernel_table(std::make_index_sequence<256>{});
  launches_apart(kernels, 0);  // each kernel's first launch
  std::vector<double> warm, cold;
  for (int b = 0; b < 20; ++b) {
    warm.push_back(launches_apart(kernels, 0));
    cold.push_back(launches_apart(kernels, 1u << 20));
  }
  if (records && !has("detach")) CHECK(cuptiActivityFlushAll(1));
  std::printf(", \"gpu_ns_per_kernel\": %.1f, \"launch_256_kernels_ns\": %.1f, "
              "\"launch_256_kernels_after_1MiB_read_ns\": %.1f}\n",
              median(gpu), median(warm), median(cold));
  return 0;
}
