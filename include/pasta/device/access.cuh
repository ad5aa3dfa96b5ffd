// pasta::device::Recorder::access: memory-access annotations for kernels
// you own. Include this in the .cu/.hip files that hold the kernels, pass
// the recorder that Annotations::begin returns, and call
//   rec.access(ptr, bytes, is_write);
// at the accesses to count. Counting is warp-aggregated (one atomic set per
// distinct page or bin, kind and size in a warp, as the sanitizer patches
// do): an access to an allocation an earlier launch touched counts on its
// page (a binary search of the known allocations), any other on a 256-byte
// bin of a device hash table. Written once for CUDA and HIP.
// With PASTA_DEVICE_ANNOTATIONS defined, this file also compiles the
// post-pass (CUB on NVIDIA, rocPRIM on AMD) and registers it for the
// handler; without it, access() compiles to nothing.
#pragma once

#include <stdint.h>

#include <pasta/device/layout.hpp>

#if defined(PASTA_DEVICE_ANNOTATIONS)
#if defined(__HIP_PLATFORM_AMD__)
#include <iostream>  // rocPRIM 5.x's debug output uses std::cout without including it
#include <rocprim/block/block_scan.hpp>
#else
#include <cub/block/block_scan.cuh>
#endif
#include <pasta/device/annotations.hpp>
#endif

namespace pasta::device {

#if defined(PASTA_DEVICE_ANNOTATIONS)

namespace detail {

// n accesses of `bytes` each on a Bin's or a page's counters.
template <class C>
__device__ __forceinline__ void add(C& c, unsigned kind, unsigned long long n, unsigned bytes) {
  if (kind & 2u) {
    atomicAdd(&c.writes, n);
    atomicAdd(&c.write_bytes, n * bytes);
  } else {
    atomicAdd(&c.reads, n);
    atomicAdd(&c.read_bytes, n * bytes);
  }
}

// A fine bin of memory no known allocation holds.
__device__ __forceinline__ void count(const Table& t, unsigned long long bin, unsigned kind,
                                      unsigned long long n, unsigned bytes) {
  // Fibonacci hashing: neighbouring bins land far apart in the table.
  unsigned long long i = (bin * 0x9E3779B97F4A7C15ull >> 24) & t.mask;
  for (unsigned probe = 0; probe < t.max_probes; ++probe, i = (i + 1) & t.mask) {
    Bin& b = t.bins[i];
    unsigned long long key = *static_cast<volatile unsigned long long*>(&b.key);
    if (key == 0) {
      key = atomicCAS(&b.key, 0ull, bin);
      if (key == 0) {  // this thread claimed it
        key = bin;
        atomicAdd(&t.counters->used, 1ull);
      }
    }
    if (key != bin) continue;
    add(b, kind, n, bytes);
    return;
  }
  atomicAdd(&t.counters->lost, n);
}

// The page slot of a known allocation holding `address`, or ~0: none does.
__device__ __forceinline__ unsigned long long page_of(const Table& t, unsigned long long address) {
  unsigned lo = 0, hi = t.range_count;  // the first range with base > address
  while (lo < hi) {
    const unsigned mid = (lo + hi) >> 1;
    if (t.ranges[mid].base <= address)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo && address < t.ranges[lo - 1].end)
    return t.ranges[lo - 1].first_page + ((address - t.ranges[lo - 1].base) >> t.page_shift);
  return ~0ull;
}

__device__ __forceinline__ void record(const Table& t, const void* p, unsigned bytes,
                                       bool is_write) {
  if (!t.bins) return;
  const unsigned long long address = reinterpret_cast<uintptr_t>(p);
  const unsigned long long page = page_of(t, address);
  // A page slot, or a fine bin (address >> bin_shift) + 1; bit 47 tells them
  // apart (user-space addresses stay below 2^47, bins below 2^39).
  const unsigned long long where =
      page != ~0ull ? page | (1ull << 47) : (address >> t.bin_shift) + 1;
  const unsigned kind = is_write ? 2u : 1u;
  auto flush = [&](unsigned long long n) {
    if (page != ~0ull)
      add(t.pages[page], kind, n, bytes);
    else
      count(t, where, kind, n, bytes);
  };
  if (bytes > max_aggregated_bytes) {
    flush(1);
    return;
  }
  // where < 2^48: the key is exact.
  const unsigned long long key =
      (where << 16) | (static_cast<unsigned long long>(bytes) << 2) | kind;
#if defined(__HIP_PLATFORM_AMD__)
  // No match instruction: peel off one key per round (the first active
  // lane's), one atomic set per distinct key, as __match_any_sync gives.
  unsigned long long active = __ballot(1);
  while (active) {
    const int leader = __ffsll(static_cast<unsigned long long>(active)) - 1;
    const unsigned long long leader_key = __shfl(key, leader);
    const unsigned long long same = __ballot(key == leader_key);
    if (key == leader_key) {
      if (static_cast<int>(__lane_id()) == leader) flush(__popcll(same));
      break;
    }
    active &= ~same;
  }
#else
  const unsigned peers = __match_any_sync(__activemask(), key);
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  if (lane == static_cast<unsigned>(__ffs(peers) - 1)) flush(__popc(peers));
#endif
}

// The post-pass kernel, for pages and for bins: one tile of 256 elements a
// round, a block scan gives each non-empty one its place in `out`, one
// atomic a tile reserves the tile's places. What it hands back it clears.
inline constexpr unsigned compact_block = 256;

struct PageSource {
  Counts* pages;
  __device__ bool keep(unsigned long long i) const {
    return (pages[i].reads | pages[i].writes) != 0;
  }
  __device__ Bin take(unsigned long long i) const {
    const Counts c = pages[i];
    pages[i] = Counts{};
    return Bin{i + 1, c.reads, c.writes, c.read_bytes, c.write_bytes};
  }
};
struct BinSource {
  Bin* bins;
  __device__ bool keep(unsigned long long i) const { return bins[i].key != 0; }
  __device__ Bin take(unsigned long long i) const {
    const Bin b = bins[i];
    bins[i] = Bin{};
    return b;
  }
};

template <class Source>
__global__ void __launch_bounds__(compact_block)
    compact(Source src, unsigned long long n, const unsigned long long* skip_if_zero, Bin* out,
            unsigned long long* out_count) {
  if (skip_if_zero && *skip_if_zero == 0) return;  // nothing was counted there
#if defined(__HIP_PLATFORM_AMD__)
  using Scan = rocprim::block_scan<unsigned, compact_block>;
  __shared__ typename Scan::storage_type storage;
#else
  using Scan = cub::BlockScan<unsigned, compact_block>;
  __shared__ typename Scan::TempStorage storage;
#endif
  __shared__ unsigned long long base;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * compact_block;
  for (unsigned long long tile = static_cast<unsigned long long>(blockIdx.x) * compact_block;
       tile < n; tile += stride) {
    const unsigned long long i = tile + threadIdx.x;
    const unsigned keep = i < n && src.keep(i);
    unsigned position = 0, total = 0;
#if defined(__HIP_PLATFORM_AMD__)
    Scan().exclusive_scan(keep, position, 0u, total, storage);
#else
    Scan(storage).ExclusiveSum(keep, position, total);
#endif
    if (threadIdx.x == 0)
      base = total ? atomicAdd(out_count, static_cast<unsigned long long>(total)) : 0;
    __syncthreads();
    if (keep) out[base + position] = src.take(i);
    __syncthreads();
  }
}

inline unsigned compact_grid(unsigned long long n) {
  const unsigned long long tiles = (n + compact_block - 1) / compact_block;
  return static_cast<unsigned>(tiles < 1024 ? (tiles ? tiles : 1) : 1024);
}

inline int post_pass_kernels(const Table& t, Bin* bins, Bin* pages, void* stream) {
#if defined(__HIP_PLATFORM_AMD__)
  const auto s = static_cast<hipStream_t>(stream);
#else
  const auto s = static_cast<cudaStream_t>(stream);
#endif
  if (t.page_count)
    compact<<<compact_grid(t.page_count), compact_block, 0, s>>>(
        PageSource{t.pages}, t.page_count, nullptr, pages, &t.counters->pages_out);
  compact<<<compact_grid(t.mask + 1), compact_block, 0, s>>>(
      BinSource{t.bins}, t.mask + 1, &t.counters->used, bins, &t.counters->bins_out);
#if defined(__HIP_PLATFORM_AMD__)
  return static_cast<int>(hipGetLastError());
#else
  return static_cast<int>(cudaGetLastError());
#endif
}

// Registers the post-pass when the program starts.
inline const bool post_pass_registered = [] {
  post_pass() = &post_pass_kernels;
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
