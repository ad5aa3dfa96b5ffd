// pasta::device::Recorder::access: memory-access annotations for kernels
// you own. Include this in the .cu/.hip files that hold the kernels, pass
// the recorder that Annotations::begin returns, and call
//   rec.access(ptr, bytes, is_write);
// at the accesses to count. Counting is warp-aggregated (one atomic set per
// distinct bin, kind and size in a warp, as the sanitizer patches do) into a
// device hash table of 256-byte bins. Written once for CUDA and HIP.
// With PASTA_DEVICE_ANNOTATIONS defined, this file also compiles the
// post-pass (CUB on NVIDIA, rocPRIM on AMD) and registers it for the
// handler; without it, access() compiles to nothing.
#pragma once

#include <stdint.h>

#include <pasta/device/layout.hpp>

#if defined(PASTA_DEVICE_ANNOTATIONS)
#if defined(__HIP_PLATFORM_AMD__)
#include <iostream>  // rocPRIM 5.x's debug output uses std::cout without including it
#include <rocprim/device/device_select.hpp>
#else
#include <cub/device/device_select.cuh>
#endif
#include <pasta/device/annotations.hpp>
#endif

namespace pasta::device {

#if defined(PASTA_DEVICE_ANNOTATIONS)

namespace detail {

__device__ __forceinline__ void count(const Table& t, unsigned long long bin, unsigned kind,
                                      unsigned long long n, unsigned bytes) {
  // Fibonacci hashing: neighbouring bins land far apart in the table.
  unsigned long long i = (bin * 0x9E3779B97F4A7C15ull >> 24) & t.mask;
  for (unsigned probe = 0; probe < t.max_probes; ++probe, i = (i + 1) & t.mask) {
    Bin& b = t.bins[i];
    unsigned long long key = *static_cast<volatile unsigned long long*>(&b.key);
    if (key == 0) {
      key = atomicCAS(&b.key, 0ull, bin);
      if (key == 0) key = bin;  // this thread claimed it
    }
    if (key != bin) continue;
    if (kind & 2u) {
      atomicAdd(&b.writes, n);
      atomicAdd(&b.write_bytes, n * bytes);
    } else {
      atomicAdd(&b.reads, n);
      atomicAdd(&b.read_bytes, n * bytes);
    }
    return;
  }
  atomicAdd(t.lost, n);
}

__device__ __forceinline__ void record(const Table& t, const void* p, unsigned bytes,
                                       bool is_write) {
  if (!t.bins) return;
  const unsigned long long bin = (reinterpret_cast<uintptr_t>(p) >> t.bin_shift) + 1;
  const unsigned kind = is_write ? 2u : 1u;
  if (bytes > max_aggregated_bytes) {
    count(t, bin, kind, 1, bytes);
    return;
  }
  // Addresses below 2^56 leave bin < 2^48 with 256-byte bins: the key is exact.
  const unsigned long long key = (bin << 16) | (static_cast<unsigned long long>(bytes) << 2) | kind;
#if defined(__HIP_PLATFORM_AMD__)
  // No match instruction: peel off one key per round (the first active
  // lane's), one atomic set per distinct key, as __match_any_sync gives.
  unsigned long long active = __ballot(1);
  while (active) {
    const int leader = __ffsll(static_cast<unsigned long long>(active)) - 1;
    const unsigned long long leader_key = __shfl(key, leader);
    const unsigned long long same = __ballot(key == leader_key);
    if (key == leader_key) {
      if (static_cast<int>(__lane_id()) == leader) count(t, bin, kind, __popcll(same), bytes);
      break;
    }
    active &= ~same;
  }
#else
  const unsigned peers = __match_any_sync(__activemask(), key);
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  if (lane == static_cast<unsigned>(__ffs(peers) - 1)) count(t, bin, kind, __popc(peers), bytes);
#endif
}

struct NonEmpty {
  __host__ __device__ bool operator()(const Bin& b) const { return b.key != 0; }
};

inline int select_bins(void* temp, size_t* temp_bytes, const Bin* in, Bin* out,
                       unsigned long long* count, size_t n, void* stream) {
#if defined(__HIP_PLATFORM_AMD__)
  return static_cast<int>(rocprim::select(temp, *temp_bytes, in, out, count, n, NonEmpty{},
                                          static_cast<hipStream_t>(stream)));
#else
  return static_cast<int>(cub::DeviceSelect::If(temp, *temp_bytes, in, out, count,
                                                static_cast<int64_t>(n), NonEmpty{},
                                                static_cast<cudaStream_t>(stream)));
#endif
}

// Registers the post-pass when the program starts.
inline const bool post_pass_registered = [] {
  post_pass() = &select_bins;
  return true;
}();

}  // namespace detail

__device__ __forceinline__ void Recorder::access(const void* p, unsigned bytes,
                                                 bool is_write) const {
  detail::record(table, p, bytes, is_write);
}

// kernel<<<grid, block, shared, stream>>>(args..., recorder), between
// ann.begin and ann.end.
template <class... Params, class... Args>
void launch(Annotations& ann, const char* name, void (*kernel)(Params...), dim3 grid, dim3 block,
            size_t shared, Annotations::Stream stream, Args&&... args) {
  const Recorder r = ann.begin(name, grid, block, stream);
  kernel<<<grid, block, shared, stream>>>(static_cast<Args&&>(args)..., r);
  ann.end(r, stream);
}

#else  // annotations compiled out

__device__ __forceinline__ void Recorder::access(const void*, unsigned, bool) const {}

#endif

}  // namespace pasta::device
