// The post-pass of proc::GpuBucketing, run on the device after each
// instrumented kernel: keeps the non-empty page counters (CUB block scan
// for each tile's output positions), appends them to `out`, and zeroes the
// counters for the next kernel; pasta_compact_pcs does the same for the
// per-instruction counts. `out` is pinned host memory, which the host
// reads in place once the stream is done.
#include <cub/block/block_scan.cuh>

#include <pasta/nv/sanitizer/detail/access_layout.hpp>

using pasta::nv::device::Bin;
using pasta::nv::device::compact_block;
using pasta::nv::device::PcCount;
using pasta::nv::device::Slot;

namespace {

// Appends the items of items[0, n) that `kept` keeps to `out`, as `as_out`
// makes them, in tile order (a CUB block scan gives each tile's positions,
// one atomic a tile its place), and clears them for the next launch.
template <class Item, class Out, class Kept, class AsOut>
__device__ __forceinline__ void compact(Item* items, uint64_t n, Out* out,
                                        unsigned long long* out_count, Kept kept, AsOut as_out) {
  using Scan = cub::BlockScan<unsigned, compact_block>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ unsigned long long base;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * compact_block;
  for (uint64_t tile = static_cast<uint64_t>(blockIdx.x) * compact_block; tile < n;
       tile += stride) {
    const uint64_t i = tile + threadIdx.x;
    Item item{};
    unsigned keep = 0;
    if (i < n) {
      item = items[i];
      keep = kept(item);
    }
    unsigned position, total;
    Scan(scan).ExclusiveSum(keep, position, total);
    if (threadIdx.x == 0)
      base = total ? atomicAdd(out_count, static_cast<unsigned long long>(total)) : 0;
    __syncthreads();
    if (keep) {
      out[base + position] = as_out(i, item);
      items[i] = Item{};
    }
    __syncthreads();
  }
}

}  // namespace

// The page counters that counted something, as bins.
extern "C" __global__ void __launch_bounds__(compact_block)
    pasta_compact_slots(Slot* slots, uint64_t slot_count, Bin* out, unsigned long long* out_count) {
  compact(
      slots, slot_count, out, out_count,
      [](const Slot& s) -> unsigned { return (s.reads | s.writes) != 0; },
      [](uint64_t i, const Slot& s) {
        return Bin{i, s};
      });
}

// The per-instruction counts (the pc patches): the claimed slots of `table`
// (n slots: the hash table, or the overflow records), as they are.
extern "C" __global__ void __launch_bounds__(compact_block)
    pasta_compact_pcs(PcCount* table, uint64_t n, PcCount* out, unsigned long long* out_count) {
  compact(
      table, n, out, out_count, [](const PcCount& c) -> unsigned { return c.key != 0; },
      [](uint64_t, const PcCount& c) { return c; });
}

// After pasta_compact_slots, one thread: the count goes to the host (pinned
// memory the host reads in place) and is cleared for the next launch.
extern "C" __global__ void pasta_publish_count(unsigned long long* count,
                                               unsigned long long* host_count) {
  *host_count = *count;
  *count = 0;
}
