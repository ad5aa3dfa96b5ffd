// The GPU runtime calls of the annotation handler, host side only, named
// once for CUDA (runtime API) and HIP (define __HIP_PLATFORM_AMD__ where a
// host compiler builds it; hipcc defines it). No device compiler needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include <pasta/device/detail/bins.hpp>

#if defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime_api.h>
#else
#include <cuda.h>
#include <cuda_runtime.h>
#endif

namespace pasta::device::detail::gpu {

#if defined(__HIP_PLATFORM_AMD__)
using Stream = hipStream_t;
using Event = hipEvent_t;
using Error = hipError_t;
inline const char* error_string(int e) { return hipGetErrorString(static_cast<Error>(e)); }
inline Error device(int* d) { return hipGetDevice(d); }
inline Error alloc(void** p, std::size_t bytes) { return hipMalloc(p, bytes); }
inline Error free(void* p) { return hipFree(p); }
// Pinned, mapped host memory: the post-pass writes it, the host reads it in place.
inline Error alloc_host(void** p, std::size_t bytes) {
  return hipHostMalloc(p, bytes, hipHostMallocMapped);
}
inline Error free_host(void* p) { return hipHostFree(p); }
inline Error zero(void* p, std::size_t bytes, Stream s) { return hipMemsetAsync(p, 0, bytes, s); }
inline Error to_host(void* dst, const void* src, std::size_t bytes, Stream s) {
  return hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToHost, s);
}
inline Error to_device(void* dst, const void* src, std::size_t bytes) {
  return hipMemcpy(dst, src, bytes, hipMemcpyHostToDevice);
}
inline Error event_create(Event* e) { return hipEventCreate(e); }
inline Error event_destroy(Event e) { return hipEventDestroy(e); }
inline Error event_record(Event e, Stream s) { return hipEventRecord(e, s); }
inline Error elapsed_ms(float* ms, Event a, Event b) { return hipEventElapsedTime(ms, a, b); }
inline Error synchronize(Stream s) { return hipStreamSynchronize(s); }
inline std::optional<Range> allocation(std::uint64_t address) {
  hipDeviceptr_t base = nullptr;
  std::size_t bytes = 0;
  if (hipMemGetAddressRange(&base, &bytes, reinterpret_cast<hipDeviceptr_t>(address)) !=
      hipSuccess) {
    (void)hipGetLastError();
    return std::nullopt;
  }
  hipPointerAttribute_t attr{};
  const bool managed =
      hipPointerGetAttributes(&attr, reinterpret_cast<void*>(address)) == hipSuccess &&
      attr.isManaged;
  (void)hipGetLastError();
  return Range{.base = reinterpret_cast<std::uint64_t>(base),
               .bytes = bytes,
               .kind = managed ? MemKind::managed : MemKind::device};
}
#else
using Stream = cudaStream_t;
using Event = cudaEvent_t;
using Error = cudaError_t;
inline const char* error_string(int e) { return cudaGetErrorString(static_cast<Error>(e)); }
inline Error device(int* d) { return cudaGetDevice(d); }
inline Error alloc(void** p, std::size_t bytes) { return cudaMalloc(p, bytes); }
inline Error free(void* p) { return cudaFree(p); }
inline Error alloc_host(void** p, std::size_t bytes) {
  return cudaHostAlloc(p, bytes, cudaHostAllocMapped);
}
inline Error free_host(void* p) { return cudaFreeHost(p); }
inline Error zero(void* p, std::size_t bytes, Stream s) { return cudaMemsetAsync(p, 0, bytes, s); }
inline Error to_host(void* dst, const void* src, std::size_t bytes, Stream s) {
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s);
}
inline Error to_device(void* dst, const void* src, std::size_t bytes) {
  return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
}
inline Error event_create(Event* e) { return cudaEventCreate(e); }
inline Error event_destroy(Event e) { return cudaEventDestroy(e); }
inline Error event_record(Event e, Stream s) { return cudaEventRecord(e, s); }
inline Error elapsed_ms(float* ms, Event a, Event b) { return cudaEventElapsedTime(ms, a, b); }
inline Error synchronize(Stream s) { return cudaStreamSynchronize(s); }
// The driver's cuMemGetAddressRange, found through the runtime: the program
// need not link libcuda.
inline std::optional<Range> allocation(std::uint64_t address) {
  using Fn = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);
  static const Fn get_range = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      fn = nullptr;
    return reinterpret_cast<Fn>(fn);
  }();
  if (!get_range) return std::nullopt;
  CUdeviceptr base = 0;
  std::size_t bytes = 0;
  if (get_range(&base, &bytes, static_cast<CUdeviceptr>(address)) != CUDA_SUCCESS)
    return std::nullopt;
  cudaPointerAttributes attr{};
  const bool managed =
      cudaPointerGetAttributes(&attr, reinterpret_cast<void*>(address)) == cudaSuccess &&
      attr.type == cudaMemoryTypeManaged;
  (void)cudaGetLastError();
  return Range{.base = base, .bytes = bytes, .kind = managed ? MemKind::managed : MemKind::device};
}
#endif

}  // namespace pasta::device::detail::gpu
