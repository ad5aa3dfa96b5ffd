// The memory layout shared by the device annotations (access.cuh) and their
// host side (annotations.hpp, detail/bins.hpp). Plain structs, no library
// headers: nvcc, hipcc and the host compiler all read this.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace pasta::device {

// Counters of one bin of addresses: the accesses that fell in
// [(key - 1) << bin_shift, key << bin_shift). key 0 marks an empty bin.
struct Bin {
  unsigned long long key;
  unsigned long long reads, writes, read_bytes, write_bytes;
};

// The device-side hash table an annotated launch counts into (open
// addressing, linear probing). bins == nullptr: the launch is not recorded.
struct Table {
  Bin* bins;
  unsigned long long mask;   // capacity - 1; capacity is a power of two
  unsigned long long* lost;  // accesses that found no free bin within max_probes
  unsigned bin_shift;
  unsigned max_probes;
};

// Bins of 256 bytes: CUDA and HIP allocations start on a 256-byte boundary
// at least, so no bin holds bytes of two allocations and counts are charged
// to the right one exactly.
inline constexpr unsigned default_bin_shift = 8;
inline constexpr unsigned default_max_probes = 64;

// What an annotated kernel takes as an argument. Every translation unit of a
// program must agree on PASTA_DEVICE_ANNOTATIONS: without it the recorder is
// empty and its access() (access.cuh) compiles to nothing.
struct Recorder {
#if defined(PASTA_DEVICE_ANNOTATIONS)
  Table table{};
  unsigned long long correlation = 0;  // for the host: which launch of Annotations this is
#endif
#if defined(__CUDACC__) || defined(__HIPCC__)
  __device__ __forceinline__ void access(const void* p, unsigned bytes, bool is_write) const;
#endif
};

// The post-pass: copies the non-empty bins of `in` to `out` and their number
// to *count, stream-ordered; with temp == nullptr only sizes *temp_bytes.
// Returns the runtime's error code (0 = success). It is compiled where the
// kernels are (access.cuh registers it, with CUB or rocPRIM), so the
// handler itself needs no device compiler.
using PostPass = int (*)(void* temp, size_t* temp_bytes, const Bin* in, Bin* out,
                         unsigned long long* count, size_t n, void* stream);
inline PostPass& post_pass() {
  static PostPass f = nullptr;
  return f;
}

// One access of at most this many bytes is warp-aggregated; larger ones
// count alone (their size does not fit the aggregation key).
inline constexpr unsigned max_aggregated_bytes = 0x3fff;

}  // namespace pasta::device
