// proc::Cpu: the conventional processor. Events pass through on the host,
// correlated on the way: completions get their launch's name and shape,
// kernel selection (filter, skip, count) applies to launches and to what
// they cause, and memory accesses learn which allocation they hit.
#pragma once

#include <cstdint>
#include <type_traits>
#include <unordered_map>

#include <pasta/core/address_map.hpp>
#include <pasta/core/config.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/kernel_selector.hpp>
#include <pasta/core/report.hpp>

namespace pasta::proc {

class Cpu {
 public:
  static constexpr std::string_view name = "correlation";

  explicit Cpu(const Config& cfg) : selector_(cfg) {}

  template <class Next, class E>
  static constexpr bool wants() {
    constexpr bool accesses = Next::template wants<MemAccess>() ||
                              Next::template wants<AccessHistogram>() ||
                              Next::template wants<PcAccessCount>();
    if constexpr (std::is_same_v<E, MemAccess>)
      return Next::template wants<MemAccess>() || Next::template wants<PcAccessCount>();
    else if constexpr (std::is_same_v<E, KernelLaunch>)
      return Next::template wants<KernelLaunch>() || Next::template wants<KernelComplete>() ||
             accesses;
    else if constexpr (std::is_same_v<E, MemAlloc> || std::is_same_v<E, MemFree>)
      return Next::template wants<E>() || accesses;
    else
      return Next::template wants<E>();
  }

  template <class Next, class E>
  void on(const E& e, Next& next) {
    if constexpr (Next::template wants<E>()) next.emit(e);
  }

  template <class Next>
  void on(const KernelLaunch& e, Next& next) {
    ++launches_;
    const bool selected = selector_.select(e.name);
    if constexpr (Next::template wants<KernelComplete>() || Next::template wants<MemAccess>() ||
                  Next::template wants<AccessHistogram>() || Next::template wants<PcAccessCount>())
      in_flight_[e.correlation] = {e, selected};
    if (!selected) return;
    ++selected_;
    if constexpr (Next::template wants<KernelLaunch>()) next.emit(e);
  }

  template <class Next>
  void on(const KernelComplete& e, Next& next) {
    KernelComplete out = e;
    bool selected;
    if (auto it = in_flight_.find(e.correlation); it != in_flight_.end()) {
      const KernelLaunch& l = it->second.launch;
      if (!out.name) out.name = l.name;
      if (!out.stream) out.stream = l.stream;
      if (!out.context) out.context = l.context;
      if (out.grid == Dim3{} && out.block == Dim3{}) {
        out.grid = l.grid;
        out.block = l.block;
        out.shared_mem_bytes = l.shared_mem_bytes;
      }
      selected = it->second.selected;
      in_flight_.erase(it);
    } else {
      // Completions without a launch event (device-side records only):
      // selection is decided here, in completion order.
      ++unmatched_completions_;
      selected = selector_.select(e.name);
      selected_ += selected;
    }
    if (selected) next.emit(out);
  }

  template <class Next>
  void on(const MemAlloc& e, Next& next) {
    overlapping_allocs_ += addresses_.insert(
        {.base = e.address, .bytes = e.bytes, .device = e.device, .kind = e.mem_kind});
    if constexpr (Next::template wants<MemAlloc>()) next.emit(e);
  }

  template <class Next>
  void on(const MemFree& e, Next& next) {
    MemFree out = e;
    if (auto a = addresses_.erase(e.address)) {
      if (!out.bytes) out.bytes = a->bytes;
      if (out.mem_kind == MemKind::unknown) out.mem_kind = a->kind;
    } else {
      ++unknown_frees_;
    }
    if constexpr (Next::template wants<MemFree>()) next.emit(out);
  }

  // A raw access goes on as it is, and as a count of one to tools that
  // count per instruction: the host-side reduction they are compared with.
  template <class Next>
  void on(const MemAccess& e, Next& next) {
    if constexpr (Next::template wants<MemAccess>() || Next::template wants<PcAccessCount>()) {
      if (!launch_selected(e.correlation)) return;
      MemAccess out = e;
      // Shared and local addresses are offsets in their own windows.
      out.alloc_base = e.space == MemSpace::global ? allocation_of(e.address) : 0;
      if constexpr (Next::template wants<MemAccess>()) next.emit(out);
      if constexpr (Next::template wants<PcAccessCount>())
        next.emit(PcAccessCount{.correlation = e.correlation,
                                .address = e.address,
                                .pc = e.pc,
                                .count = 1,
                                .bytes = e.bytes,
                                .device = e.device,
                                .flags = e.flags,
                                .space = e.space});
    }
  }

  template <class Next>
  void on(const PcAccessCount& e, Next& next) {
    if constexpr (Next::template wants<PcAccessCount>())
      if (launch_selected(e.correlation)) next.emit(e);
  }

  template <class Next>
  void on(const AccessHistogram& e, Next& next) {
    if constexpr (Next::template wants<AccessHistogram>()) {
      if (!launch_selected(e.correlation)) return;
      AccessHistogram out = e;
      if (!out.alloc_base && out.address) out.alloc_base = allocation_of(e.address);
      next.emit(out);
    }
  }

  void report(Report& out) const {
    out.page(150);  // after the tools
    out.summary("kernel launches seen", launches_);
    out.summary("kernel launches selected", selected_);
    out.summary("completions without a launch event", unmatched_completions_);
    out.summary("launches still in flight", in_flight_.size());
    out.summary("accesses outside any known allocation", unowned_accesses_);
    out.summary("frees of unknown addresses", unknown_frees_);
    out.summary("allocations replaced without a free", overlapping_allocs_);
    out.summary("live allocations", addresses_.size());
  }

  const AddressMap& addresses() const { return addresses_; }

 private:
  struct InFlight {
    KernelLaunch launch;
    bool selected;
  };

  bool launch_selected(std::uint64_t correlation) const {
    auto it = in_flight_.find(correlation);
    return it == in_flight_.end() || it->second.selected;
  }

  std::uint64_t allocation_of(std::uint64_t address) {
    if (const Allocation* a = addresses_.find(address)) return a->base;
    ++unowned_accesses_;
    return 0;
  }

  KernelSelector selector_;
  AddressMap addresses_;
  std::unordered_map<std::uint64_t, InFlight> in_flight_;
  std::uint64_t launches_ = 0, selected_ = 0, unmatched_completions_ = 0;
  std::uint64_t unowned_accesses_ = 0, unknown_frees_ = 0, overlapping_allocs_ = 0;
};

}  // namespace pasta::proc
