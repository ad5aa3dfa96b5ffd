// The parts of CUPTI the handler uses, included piecewise: cupti.h cannot
// share a translation unit with the Sanitizer API's sanitizer.h (both
// define the CUDA_*_v1 placeholder structs).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_nvtx_cbid.h>
#include <cupti_result.h>
#include <cupti_runtime_cbid.h>
#include <generated_nvtx_meta.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/log.hpp>

namespace pasta::nv::detail {

// The parameter blocks of the launch (and copy) callbacks pasta reads. They
// mirror cudaLaunchKernel_v7000_params, cudaLaunchKernelExC_v11060_params,
// cuLaunchKernel_params and cuLaunchKernelEx_params: the CUPTI headers that
// define those need placeholder types that sanitizer.h defines again.
struct RuntimeLaunchParams {  // cudaLaunchKernel, cudaLaunchCooperativeKernel
  const void* func;
  dim3 gridDim;
  dim3 blockDim;
  void** args;
  size_t sharedMem;
  cudaStream_t stream;
};
struct RuntimeLaunchExParams {  // cudaLaunchKernelExC
  const cudaLaunchConfig_t* config;
  const void* func;
  void** args;
};
// cudaMemcpy_v3020_params and cudaMemcpyAsync_v3020_params (and their
// per-thread forms) begin alike: what a copy's kind is read from.
struct RuntimeCopyParams {
  void* dst;
  const void* src;
  size_t count;
  cudaMemcpyKind kind;
};
struct DriverLaunchParams {  // cuLaunchKernel, cuLaunchCooperativeKernel
  CUfunction f;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  void** kernelParams;
  void** extra;
};
struct DriverLaunchExParams {  // cuLaunchKernelEx
  const CUlaunchConfig* config;
  CUfunction f;
  void** kernelParams;
  void** extra;
};

// A value for each callback of the runtime and driver API domains, by cbid;
// T{} for any other domain or callback.
template <class T>
class ByCallback {
 public:
  void set(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, T value) {
    std::vector<T>& t = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_ : driver_;
    if (t.empty())
      t.assign(domain == CUPTI_CB_DOMAIN_RUNTIME_API ? std::size_t{CUPTI_RUNTIME_TRACE_CBID_SIZE}
                                                     : std::size_t{CUPTI_DRIVER_TRACE_CBID_SIZE},
               T{});
    if (cbid < t.size()) t[cbid] = value;
  }
  T operator()(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) const {
    if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return T{};
    const std::vector<T>& t = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_ : driver_;
    return cbid < t.size() ? t[cbid] : T{};
  }

 private:
  std::vector<T> runtime_, driver_;
};

// The allocation calls user replay follows (it saves every allocation), by
// what their parameter blocks start with: an allocation's (T** ptr, size_t
// bytes, ...); a pitched one's (T** ptr, size_t* pitch, size_t width,
// size_t height, ...); a free's (T* ptr, ...); a mapping's and an unmapping's
// (CUdeviceptr ptr, size_t bytes, ...).
enum class MemoryCall : std::uint8_t { none, alloc, alloc_pitch, free, map, unmap };
struct MemoryCallId {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  MemoryCall call;
};
inline constexpr std::array<MemoryCallId, 20> memory_calls{{
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, MemoryCall::alloc},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
     MemoryCall::alloc_pitch},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, MemoryCall::alloc},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, MemoryCall::alloc},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz, MemoryCall::alloc},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
     MemoryCall::alloc},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
     MemoryCall::alloc},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, MemoryCall::free},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, MemoryCall::free},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, MemoryCall::free},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemMap, MemoryCall::map},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, MemoryCall::unmap},
    // The runtime's too, in case its allocations reach the driver unseen.
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, MemoryCall::alloc},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
     MemoryCall::alloc_pitch},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
     MemoryCall::alloc},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
     MemoryCall::alloc},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
     MemoryCall::alloc},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, MemoryCall::free},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, MemoryCall::free},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020,
     MemoryCall::free},
}};

// What a successful allocation call did to the program's memory, read from
// its parameters after it returned.
struct MemoryChange {
  enum Kind : std::uint8_t { added, removed, unmapped } kind;
  std::uint64_t base, bytes;
  friend bool operator==(const MemoryChange&, const MemoryChange&) = default;
};
inline std::optional<MemoryChange> memory_change(MemoryCall call, const void* params) {
  const auto* p = static_cast<const unsigned char*>(params);
  auto word = [&](std::size_t i) {  // the i-th 8-byte parameter
    std::uint64_t v = 0;
    std::memcpy(&v, p + 8 * i, sizeof v);
    return v;
  };
  auto at = [](std::uint64_t address) {  // what a T** or size_t* parameter points to
    std::uint64_t v = 0;
    if (address) std::memcpy(&v, reinterpret_cast<const void*>(address), sizeof v);
    return v;
  };
  auto added = [](std::uint64_t base, std::uint64_t bytes) -> std::optional<MemoryChange> {
    if (!base) return std::nullopt;
    return MemoryChange{MemoryChange::added, base, bytes};
  };
  switch (call) {
    case MemoryCall::alloc:
      return added(at(word(0)), word(1));
    case MemoryCall::alloc_pitch:
      return added(at(word(0)), at(word(1)) * word(3));
    case MemoryCall::free:
      return MemoryChange{MemoryChange::removed, word(0), 0};
    case MemoryCall::map:
      return added(word(0), word(1));
    case MemoryCall::unmap:
      return MemoryChange{MemoryChange::unmapped, word(0), word(1)};
    case MemoryCall::none:
      break;
  }
  return std::nullopt;
}

inline std::string cupti_error(CUptiResult r) {
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || !text) text = "unknown error";
  return fmt::format("{} ({})", text, static_cast<int>(r));
}

// Whether a CUPTI call succeeded; a failure is logged, once per `what`.
inline bool cupti_ok(CUptiResult r, std::string_view what) {
  if (r == CUPTI_SUCCESS) return true;
  pasta::detail::log_once(fmt::format("cupti:{}", what),
                          fmt::format("CUPTI: {} failed: {}", what, cupti_error(r)));
  return false;
}

// CUPTI's id of the stream an API call names, as its records give it (0 when
// CUPTI cannot tell; logged once per `what`). A null stream is the context's
// default stream, the calling thread's own for a per-thread (_ptsz) call:
// CUPTI is asked with the context, then by the driver's handle for it.
inline std::uint32_t cupti_stream_id(CUcontext context, CUstream stream, bool per_thread,
                                     std::string_view what) {
  std::uint32_t id = 0;
  CUptiResult r = cuptiGetStreamIdEx(context, stream, per_thread ? 1 : 0, &id);
  if (r != CUPTI_SUCCESS && stream == nullptr)
    r = cuptiGetStreamIdEx(context, per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY, 0, &id);
  if (r == CUPTI_SUCCESS) return id;
  pasta::detail::log_once(fmt::format("cupti:stream:{}", what),
                          fmt::format("cupti handler: a {}'s stream is unknown to CUPTI ({}); it "
                                      "shows on stream 0",
                                      what, cupti_error(r)));
  return 0;
}

// CUPTI's clock, which host events share so that timelines line up.
inline std::uint64_t cupti_clock() {
  std::uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

}  // namespace pasta::nv::detail
