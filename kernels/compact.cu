// The post-pass of proc::GpuBucketing, run on the device after each
// instrumented kernel: keeps the non-empty page counters (CUB block scan
// for each tile's output positions), appends them to `out`, and zeroes the
// counters for the next kernel; pasta_compact_pcs does the same for the
// per-instruction counts. `out` is pinned host memory, which the host
// reads in place once the stream is done.
#include <cub/block/block_scan.cuh>

#include <pasta/nv/detail/access_layout.hpp>

using pasta::nv::device::Bin;
using pasta::nv::device::compact_block;
using pasta::nv::device::PcCount;
using pasta::nv::device::Slot;

extern "C" __global__ void __launch_bounds__(compact_block)
    pasta_compact_slots(Slot* slots, uint64_t slot_count, Bin* out, unsigned long long* out_count) {
  using Scan = cub::BlockScan<unsigned, compact_block>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ unsigned long long base;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * compact_block;
  for (uint64_t tile = static_cast<uint64_t>(blockIdx.x) * compact_block; tile < slot_count;
       tile += stride) {
    const uint64_t i = tile + threadIdx.x;
    Slot s{};
    unsigned keep = 0;
    if (i < slot_count) {
      s = slots[i];
      keep = (s.reads | s.writes) != 0;
    }
    unsigned position, total;
    Scan(scan).ExclusiveSum(keep, position, total);
    if (threadIdx.x == 0)
      base = total ? atomicAdd(out_count, static_cast<unsigned long long>(total)) : 0;
    __syncthreads();
    if (keep) {
      out[base + position] = Bin{i, s};
      slots[i] = Slot{};
    }
    __syncthreads();
  }
}

// The same for the per-instruction counts (the pc patches): the claimed
// slots of `table` (n slots: the hash table, or the overflow records) are
// appended to `out` and cleared.
extern "C" __global__ void __launch_bounds__(compact_block)
    pasta_compact_pcs(PcCount* table, uint64_t n, PcCount* out, unsigned long long* out_count) {
  using Scan = cub::BlockScan<unsigned, compact_block>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ unsigned long long base;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * compact_block;
  for (uint64_t tile = static_cast<uint64_t>(blockIdx.x) * compact_block; tile < n;
       tile += stride) {
    const uint64_t i = tile + threadIdx.x;
    PcCount c{};
    unsigned keep = 0;
    if (i < n) {
      c = table[i];
      keep = c.key != 0;
    }
    unsigned position, total;
    Scan(scan).ExclusiveSum(keep, position, total);
    if (threadIdx.x == 0)
      base = total ? atomicAdd(out_count, static_cast<unsigned long long>(total)) : 0;
    __syncthreads();
    if (keep) {
      out[base + position] = c;
      table[i] = PcCount{};
    }
    __syncthreads();
  }
}

// After pasta_compact_slots, one thread: the count goes to the host (pinned
// memory the host reads in place) and is cleared for the next launch.
extern "C" __global__ void pasta_publish_count(unsigned long long* count,
                                               unsigned long long* host_count) {
  *host_count = *count;
  *count = 0;
}
