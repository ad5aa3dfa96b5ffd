// The memory layout shared by the device annotations (access.cuh) and their
// host side (annotations.hpp, detail/bins.hpp). Plain structs, no library
// headers: nvcc, hipcc and the host compiler all read this.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace pasta::device {

// Counters of one bin of addresses: the accesses that fell in
// [(key - 1) << bin_shift, key << bin_shift). key 0 marks an empty bin.
// The post-pass hands pages back in the same shape, key = page slot + 1.
struct Bin {
  unsigned long long key;
  unsigned long long reads, writes, read_bytes, write_bytes;
};

// Counters of one page of a known allocation.
struct Counts {
  unsigned long long reads, writes, read_bytes, write_bytes;
};

// An allocation an earlier launch touched, sorted by base. Its pages are
// counted in Table::pages[first_page .. first_page + pages - 1].
struct KnownRange {
  uint64_t base;
  uint64_t end;  // one past the last byte
  uint64_t first_page;
};

// Device counters of one launch, read back and cleared after it.
struct Counters {
  unsigned long long lost;       // accesses that found no free bin within max_probes
  unsigned long long used;       // bins claimed: 0 lets the post-pass skip the bin table
  unsigned long long bins_out;   // non-empty bins the post-pass handed back
  unsigned long long pages_out;  // non-empty pages the post-pass handed back
};

// What an annotated launch counts into. An access inside a known allocation
// goes straight to its page's counters (one lookup, no hashing); any other
// goes to a hash table of fine bins (open addressing, linear probing), whose
// allocations the host learns after the launch and hands the next launches
// as known ranges. bins == nullptr: the launch is not recorded.
struct Table {
  Bin* bins;
  unsigned long long mask;  // bin capacity - 1; capacity is a power of two
  Counters* counters;
  unsigned bin_shift;
  unsigned max_probes;
  const KnownRange* ranges;
  unsigned range_count;
  unsigned page_shift;
  Counts* pages;
  unsigned long long page_count;
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

// The post-pass, stream-ordered after the launch: appends the non-empty
// pages of t.pages to `pages` and the non-empty bins of t.bins to `bins`
// (their numbers to t.counters), clearing what it hands back. Returns the
// runtime's error code (0 = success). It is compiled where the kernels are
// (access.cuh registers it, with CUB or rocPRIM), so the handler itself
// needs no device compiler.
using PostPass = int (*)(const Table& t, Bin* bins, Bin* pages, void* stream);
inline PostPass& post_pass() {
  static PostPass f = nullptr;
  return f;
}

// One access of at most this many bytes is warp-aggregated; larger ones
// count alone (their size does not fit the aggregation key).
inline constexpr unsigned max_aggregated_bytes = 0x3fff;

}  // namespace pasta::device
