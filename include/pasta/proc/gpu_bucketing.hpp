// proc::GpuBucketing: memory accesses are reduced on the device. With it in
// the processor slot, a handler that instruments memory (nv::Sanitizer)
// counts accesses inside the patch (warp-aggregated atomics on device-side
// tables), compacts the counters with a CUB pass after each kernel, and
// hands the host only the non-empty ones:
//   * AccessHistogram: per allocation page (tools of memory hotness);
//   * PcAccessCount: per instruction and region of memory, the regions the
//     tools give for the launch (core/access_regions.hpp; StallBlame).
// Raw MemAccess events are never produced, so tools that consume only those
// get nothing here: pick proc::Cpu for them.
//
// On the host it correlates like proc::Cpu: launches with completions,
// kernel selection, histogram bins with their allocation.
#pragma once

#include <string_view>
#include <type_traits>

#include <pasta/core/events.hpp>
#include <pasta/proc/cpu.hpp>

namespace pasta::proc {

class GpuBucketing : public Cpu {
 public:
  static constexpr std::string_view name = "gpu_bucketing";

  using Cpu::Cpu;

  template <class Next, class E>
  static constexpr bool wants() {
    if constexpr (std::is_same_v<E, MemAccess>)
      return false;  // reduced on the device: handlers deliver AccessHistogram instead
    else if constexpr (std::is_same_v<E, KernelLaunch>)
      return Next::template wants<KernelLaunch>() || Next::template wants<KernelComplete>() ||
             Next::template wants<AccessHistogram>() || Next::template wants<PcAccessCount>();
    else if constexpr (std::is_same_v<E, MemAlloc> || std::is_same_v<E, MemFree>)
      return Next::template wants<E>() || Next::template wants<AccessHistogram>() ||
             Next::template wants<PcAccessCount>();
    else
      return Next::template wants<E>();
  }
};

}  // namespace pasta::proc
