// Which region of memory an address falls in, as a tool that counts
// accesses per instruction tells regions apart (core/access_regions.hpp):
// the index among sorted boundaries, and a bit per strided view over that
// region whose elements hold the address. Plain C++ with no library header:
// the device patches (kernels/) and the host (tools, tests) run this same code,
// so counts keyed by it on the device resolve on the host as raw accesses would.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define PASTA_HOST_DEVICE __host__ __device__
#else
#define PASTA_HOST_DEVICE
#endif

namespace pasta::detail::region {

// A view whose elements leave gaps, or may: (size, stride) pairs in
// elements from the largest stride down, dims[first .. first + count).
struct View {
  uint64_t base;
  uint64_t bytes;
  uint32_t element_bytes;
  uint32_t dim_first;
  uint32_t dim_count;
  uint32_t unused;
};
struct Dim {
  uint64_t size, stride;
};
// The views to test in one region: check_views[first .. first + count).
struct Checks {
  uint32_t first, count;
};

// A launch's regions: region r holds [bounds[r - 1], bounds[r]) (region 0
// everything below bounds[0], region bound_count everything from the last).
struct Table {
  const uint64_t* bounds;
  uint32_t bound_count;
  uint32_t view_count;
  const Checks* checks;  // bound_count + 1 entries
  const uint32_t* check_views;
  const View* views;
  const Dim* dims;
};

// Strided views a region can tell apart: one bit each in a key.
inline constexpr uint32_t max_checks = 16;

// Whether `address` is in an element of the view (not in a gap between
// its rows). The same test as tools::StallBlame's for a launch's views.
PASTA_HOST_DEVICE inline bool holds(const View& v, const Dim* dims, uint64_t address) {
  if (address < v.base || address - v.base >= v.bytes) return false;
  uint64_t e = (address - v.base) / v.element_bytes;
  for (uint32_t d = 0; d < v.dim_count; ++d) {
    const Dim& x = dims[v.dim_first + d];
    const uint64_t i = e / x.stride;
    if (i >= x.size) return false;
    e -= i * x.stride;
  }
  return e == 0;
}

// The number of bounds at or below `address`.
PASTA_HOST_DEVICE inline uint32_t index_of(const Table& t, uint64_t address) {
  uint32_t lo = 0, hi = t.bound_count;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) >> 1;
    if (t.bounds[mid] <= address)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// Bit i set: the region's i-th strided view holds `address`.
PASTA_HOST_DEVICE inline uint32_t holding(const Table& t, uint32_t region, uint64_t address) {
  if (!t.view_count) return 0;  // no strided view at all: no table read per access
  const Checks c = t.checks[region];
  uint32_t mask = 0;
  for (uint32_t i = 0; i < c.count; ++i)
    if (holds(t.views[t.check_views[c.first + i]], t.dims, address)) mask |= 1u << i;
  return mask;
}

// A count's key: bit 63 set (0 marks an empty slot), the instruction
// (pc offset / 16: SASS instructions are 16 bytes), the memory space, the
// region and the views holding the address.
inline constexpr unsigned pc_bits = 21, space_bits = 2, region_bits = 24, mask_bits = 16;
inline constexpr uint64_t max_pc_offset = (uint64_t{1} << (pc_bits + 4)) - 16;
inline constexpr uint32_t max_regions = (uint32_t{1} << region_bits) - 1;

PASTA_HOST_DEVICE inline uint64_t key(uint64_t pc_offset, uint32_t space, uint32_t region,
                                      uint32_t mask) {
  return (uint64_t{1} << 63) | ((pc_offset >> 4) << (space_bits + region_bits + mask_bits)) |
         (uint64_t{space} << (region_bits + mask_bits)) | (uint64_t{region} << mask_bits) | mask;
}
PASTA_HOST_DEVICE inline uint64_t pc_of(uint64_t key) {
  return ((key >> (space_bits + region_bits + mask_bits)) & ((uint64_t{1} << pc_bits) - 1)) << 4;
}
PASTA_HOST_DEVICE inline uint32_t space_of(uint64_t key) {
  return static_cast<uint32_t>(key >> (region_bits + mask_bits)) & 3u;
}
PASTA_HOST_DEVICE inline uint32_t region_of(uint64_t key) {
  return static_cast<uint32_t>(key >> mask_bits) & max_regions;
}

// The key of an access: global addresses by region and views; other spaces
// (shared and local windows) by space alone.
PASTA_HOST_DEVICE inline uint64_t access_key(const Table& t, uint64_t pc_offset, uint32_t space,
                                             uint64_t address) {
  if (space != 0) return key(pc_offset, space, 0, 0);
  const uint32_t r = index_of(t, address);
  return key(pc_offset, 0, r, holding(t, r, address));
}

// Where a key lands in a table of 2^k slots (Fibonacci-style mixing).
PASTA_HOST_DEVICE inline uint64_t slot_hash(uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return key;
}

}  // namespace pasta::detail::region
