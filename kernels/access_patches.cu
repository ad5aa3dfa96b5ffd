// Device patches for nv::Sanitizer, called at every instrumented memory
// access. Built by CMake with --compile-as-tools-patch into a fatbin that is
// embedded in a generated header; the handler picks one family per run:
//   pasta_bucket_*  GpuBucketing: look the address up in the table of live
//                   allocations, count per page with one atomic per distinct
//                   (page, kind, size) in the warp (__match_any_sync)
//   pasta_atomic_*  a baseline: the same lookup and counters, atomics per access
//   pasta_object_atomic_*  the baseline of AccelProf-style GPU analysis: the
//                   lookup, then atomics per access on the allocation's
//                   counters (everything lands in its first page's slot)
//   pasta_pc_*      per instruction: look the address up in the launch's
//                   regions (the tools' allocations, tensors and views) and
//                   count per (pc, region, views holding it) in a hash table,
//                   one atomic per distinct key in the warp
//   pasta_trace_*   the conventional trace: append a 16-byte record
//   pasta_noop_*    the floor: the cost of the patch call alone
// Each family patches global, shared and local accesses, and the
// asynchronous copies from global memory the Sanitizer API reports
// (cp.async as *_memcpy_async, cp.async.bulk as *_bulk_copy: global reads).
// Callback data is a device::Params, or null for a launch nobody selected.
#include <sanitizer_patching.h>

#include <pasta/nv/sanitizer/detail/access_layout.hpp>

using pasta::nv::device::AllocRange;
using pasta::nv::device::Params;
using pasta::nv::device::PcCount;
using pasta::nv::device::Slot;
using pasta::nv::device::TraceRecord;

namespace {

enum Space : unsigned { global = 0, shared = 1, local = 2 };

__device__ __forceinline__ unsigned lane_id() {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

// read = 1, write = 2 (an atomic is both); an access with neither counts as a read.
__device__ __forceinline__ unsigned kind_of(uint32_t flags) {
  const unsigned k = flags & (SANITIZER_MEMORY_DEVICE_FLAG_READ | SANITIZER_MEMORY_DEVICE_FLAG_WRITE);
  return k ? k : 1u;
}

// Granularity of a slot: a page of an allocation, or (the per-object
// baseline) the whole allocation, counted in its first page's slot.
enum Grain : unsigned { page = 0, object = 1 };

template <unsigned S, unsigned G = page>
__device__ __forceinline__ uint64_t slot_of(const Params& p, uint64_t address) {
  if (S != global) return p.slot_count - 3 + S;
  uint32_t lo = 0, hi = p.range_count;  // first range with base > address
  while (lo < hi) {
    const uint32_t mid = (lo + hi) >> 1;
    if (p.ranges[mid].base <= address)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo) {
    const AllocRange& r = p.ranges[lo - 1];
    if (address < r.end)
      return G == object ? r.first_slot : r.first_slot + ((address - r.base) >> p.page_shift);
  }
  return p.slot_count - 3;
}

// n accesses of `size` bytes each. (Sparing the byte atomic for 4-byte
// accesses, by counting only the excess over 4, made the warp-aggregated
// patch 12% slower on the H100: more code in the patch costs every thread.)
__device__ __forceinline__ void add(Slot& s, unsigned kind, unsigned long long n, uint32_t size) {
  const unsigned long long bytes = n * size;
  if (kind & 1u) {
    atomicAdd(&s.reads, n);
    atomicAdd(&s.read_bytes, bytes);
  }
  if (kind & 2u) {
    atomicAdd(&s.writes, n);
    atomicAdd(&s.write_bytes, bytes);
  }
}

template <unsigned S>
__device__ __forceinline__ SanitizerPatchResult bucket(void* userdata, void* ptr, uint32_t size,
                                                       uint32_t flags) {
  const auto* p = static_cast<const Params*>(userdata);
  if (!p) return SANITIZER_PATCH_SUCCESS;
  const uint64_t slot = slot_of<S>(*p, reinterpret_cast<uint64_t>(ptr));
  const unsigned kind = kind_of(flags);
  const unsigned long long key =
      (static_cast<unsigned long long>(slot) << 16) | ((size & 0x3fffu) << 2) | kind;
  const unsigned peers = __match_any_sync(__activemask(), key);
  if (lane_id() == static_cast<unsigned>(__ffs(peers) - 1)) {
    const unsigned long long n = __popc(peers);
    add(p->slots[slot], kind, n, size);
  }
  return SANITIZER_PATCH_SUCCESS;
}

template <unsigned S, unsigned G>
__device__ __forceinline__ SanitizerPatchResult per_access(void* userdata, void* ptr,
                                                           uint32_t size, uint32_t flags) {
  const auto* p = static_cast<const Params*>(userdata);
  if (!p) return SANITIZER_PATCH_SUCCESS;
  add(p->slots[slot_of<S, G>(*p, reinterpret_cast<uint64_t>(ptr))], kind_of(flags), 1, size);
  return SANITIZER_PATCH_SUCCESS;
}

// pasta::access bits of an access (an atomic reads and writes).
__device__ __forceinline__ uint32_t access_flags(uint32_t flags) {
  uint32_t f = flags & 3u;
  return f == 3u ? 7u : f ? f : 1u;
}

// n accesses under `key`: into its slot of the table, or, when no slot is
// free within max_probes, into an overflow record.
__device__ __forceinline__ void count_pc(const Params& p, unsigned long long key,
                                         unsigned long long n, uint64_t address, uint32_t size,
                                         uint32_t flags) {
  unsigned long long i = pasta::detail::region::slot_hash(key) & p.table_mask;
  for (uint32_t probe = 0; probe < p.max_probes; ++probe, i = (i + 1) & p.table_mask) {
    PcCount& c = p.table[i];
    unsigned long long k = *reinterpret_cast<volatile unsigned long long*>(&c.key);
    if (k == 0) {
      k = atomicCAS(&c.key, 0ull, key);
      if (k == 0) {  // claimed: the first access counted names the region
        c.address = address;
        c.bytes = size;
        c.flags = flags;
        atomicAdd(&c.count, n);
        return;
      }
    }
    if (k == key) {
      atomicAdd(&c.count, n);
      return;
    }
  }
  const unsigned long long at = atomicAdd(p.overflow_count, 1ull);
  if (at < p.overflow_capacity) p.overflow[at] = PcCount{key, n, address, size, flags};
}

template <unsigned S>
__device__ __forceinline__ SanitizerPatchResult per_pc(void* userdata, uint64_t pc, void* ptr,
                                                       uint32_t size, uint32_t flags) {
  const auto* p = static_cast<const Params*>(userdata);
  if (!p) return SANITIZER_PATCH_SUCCESS;
  const uint64_t address = reinterpret_cast<uint64_t>(ptr);
  const unsigned long long key =
      pasta::detail::region::access_key(p->regions, pc - p->function_pc, S, address);
  const unsigned peers = __match_any_sync(__activemask(), key);
  if (lane_id() == static_cast<unsigned>(__ffs(peers) - 1))
    count_pc(*p, key, __popc(peers), address, size, access_flags(flags));
  return SANITIZER_PATCH_SUCCESS;
}

template <unsigned S>
__device__ __forceinline__ SanitizerPatchResult trace(void* userdata, uint64_t pc, void* ptr,
                                                      uint32_t size, uint32_t flags) {
  const auto* p = static_cast<const Params*>(userdata);
  if (!p) return SANITIZER_PATCH_SUCCESS;
  // One atomic per warp reserves the records of every active lane.
  const unsigned active = __activemask();
  const unsigned lane = lane_id();
  const unsigned leader = __ffs(active) - 1;
  unsigned long long base = 0;
  if (lane == leader) base = atomicAdd(p->record_count, static_cast<unsigned long long>(__popc(active)));
  base = __shfl_sync(active, base, leader);
  const unsigned long long index = base + __popc(active & ((1u << lane) - 1u));
  if (index < p->capacity) {
    unsigned f = flags & 3u;
    if (f == 3u) f |= 4u;  // read and write: an atomic
    p->records[index] = TraceRecord{reinterpret_cast<uint64_t>(ptr),
                                    static_cast<uint32_t>(pc - p->function_pc),
                                    static_cast<uint16_t>(size > 0xffffu ? 0xffffu : size),
                                    static_cast<uint8_t>(f), static_cast<uint8_t>(S)};
  }
  return SANITIZER_PATCH_SUCCESS;
}

__device__ __forceinline__ SanitizerPatchResult noop(void*, void*, uint32_t, uint32_t) {
  return SANITIZER_PATCH_SUCCESS;
}

}  // namespace

#define PASTA_PATCH(family, space, S, body)                                                \
  extern "C" __device__ __noinline__ SanitizerPatchResult pasta_##family##_##space(        \
      void* userdata, uint64_t pc, void* ptr, uint32_t size, uint32_t flags, const void*) { \
    (void)pc;                                                                              \
    return body;                                                                           \
  }
#define PASTA_PATCH_SPACES(family, body_of)         \
  PASTA_PATCH(family, global, global, body_of(global)) \
  PASTA_PATCH(family, shared, shared, body_of(shared)) \
  PASTA_PATCH(family, local, local, body_of(local))

// Asynchronous copies read global memory: cp.async per thread (src null:
// nothing read), cp.async.bulk once per warp (every active thread sees the
// same copy; bits 0-15 of `data` are its 16-byte blocks).
#define PASTA_ASYNC_PATCHES(family, body_of)                                                     \
  extern "C" __device__ __noinline__ SanitizerPatchResult pasta_##family##_memcpy_async(         \
      void* userdata, uint64_t pc, void* src, uint32_t, uint32_t access_size) {                  \
    (void)pc;                                                                                    \
    if (!src) return SANITIZER_PATCH_SUCCESS;                                                    \
    void* ptr = src;                                                                             \
    const uint32_t size = access_size, flags = SANITIZER_MEMORY_DEVICE_FLAG_READ;                \
    return body_of(global);                                                                      \
  }                                                                                              \
  extern "C" __device__ __noinline__ SanitizerPatchResult pasta_##family##_bulk_copy(            \
      void* userdata, uint64_t pc, uint64_t src, uint32_t, uint32_t, uint32_t data, uint32_t) {  \
    (void)pc;                                                                                    \
    if (lane_id() != static_cast<unsigned>(__ffs(__activemask()) - 1))                           \
      return SANITIZER_PATCH_SUCCESS;                                                            \
    void* ptr = reinterpret_cast<void*>(src);                                                    \
    const uint32_t size = (data & 0xffffu) * 16u, flags = SANITIZER_MEMORY_DEVICE_FLAG_READ;     \
    return body_of(global);                                                                      \
  }

#define PASTA_BUCKET(S) bucket<S>(userdata, ptr, size, flags)
#define PASTA_ATOMIC(S) per_access<S, page>(userdata, ptr, size, flags)
#define PASTA_OBJECT_ATOMIC(S) per_access<S, object>(userdata, ptr, size, flags)
#define PASTA_PC(S) per_pc<S>(userdata, pc, ptr, size, flags)
#define PASTA_TRACE(S) trace<S>(userdata, pc, ptr, size, flags)
#define PASTA_NOOP(S) noop(userdata, ptr, size, flags)

#define PASTA_FAMILY(family, body_of) \
  PASTA_PATCH_SPACES(family, body_of) \
  PASTA_ASYNC_PATCHES(family, body_of)

PASTA_FAMILY(bucket, PASTA_BUCKET)
PASTA_FAMILY(atomic, PASTA_ATOMIC)
PASTA_FAMILY(object_atomic, PASTA_OBJECT_ATOMIC)
PASTA_FAMILY(pc, PASTA_PC)
PASTA_FAMILY(trace, PASTA_TRACE)
PASTA_FAMILY(noop, PASTA_NOOP)
