// Managed (unified) memory as the GPU uses it: pages of each cudaMallocManaged
// allocation touched per kernel and per scope, the working set of each
// launch, and concrete advice — cudaMemAdvise preferred location / accessed
// by, and cudaMemPrefetchAsync of the touched range before the kernel that
// first touches it (every page it touches first faults in otherwise).
// Works from device histograms (proc::GpuBucketing) or raw accesses
// (proc::Cpu); scopes are the innermost PASTA_SCOPE/NVTX range of the
// launching thread.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/api.hpp>
#include <pasta/core/detail/demangle.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/report.hpp>

namespace pasta::tools {

class UvmHotness {
 public:
  static constexpr std::string_view name = "uvm_hotness";

  struct Managed {
    std::uint64_t base = 0, bytes = 0, page_count = 0;
    bool freed = false;
    std::vector<std::uint64_t> last_touch;  // per page: launch ordinal + 1 of its last touch
    std::uint64_t touched_pages = 0, min_page = ~0ull, max_page = 0, accesses = 0;
    std::uint64_t first_ordinal = ~0ull;  // the first launch that touched it
    NameId first_kernel{};
    std::map<std::uint32_t, std::uint64_t> device_accesses;  // device -> accesses
  };
  struct KernelStats {
    std::uint64_t launches = 0, pages = 0, max_pages = 0;
  };

  UvmHotness() = default;
  explicit UvmHotness(const Config& cfg)
      : page_bytes_(std::bit_floor(std::max<std::uint64_t>(cfg.page_bytes, 1))),
        page_shift_(std::countr_zero(page_bytes_)) {}

  void on(const MemAlloc& e) {
    if (e.mem_kind != MemKind::managed) return;
    const std::uint64_t pages = (e.bytes + page_bytes_ - 1) >> page_shift_;
    live_[e.address] = managed_.size();
    Managed m;
    m.base = e.address;
    m.bytes = e.bytes;
    m.page_count = pages;
    m.last_touch.assign(pages, 0);
    managed_.push_back(std::move(m));
  }
  void on(const MemFree& e);

  void on(const ScopeBegin& e) { scopes_[e.thread].push_back(e.name); }
  void on(const ScopeEnd& e);

  void on(const KernelLaunch& e);
  void on(const KernelComplete& e);

  void on(const MemAccess& e) {
    if (e.space == MemSpace::global) touch(e.correlation, e.alloc_base, e.address, 1);
  }
  void on(const AccessHistogram& e) {
    touch(e.correlation, e.alloc_base, e.address, e.reads + e.writes);
  }

  const std::vector<Managed>& managed() const { return managed_; }

  void report(Report& out) const;  // tools/detail/uvm_hotness_impl.hpp

 private:
  struct LaunchInfo {
    NameId kernel{};
    std::uint32_t device = 0;
    NameId scope{};
  };

  static std::string hex(std::uint64_t v) { return fmt::format("0x{:x}", v); }
  static std::string kernel(NameId k) {
    return k ? pasta::detail::demangle(std::string(name_of(k))) : std::string("-");
  }

  void touch(std::uint64_t correlation, std::uint64_t alloc_base, std::uint64_t address,
             std::uint64_t n);

  void close_launch();

  void advise(const Managed& m, Table& advice) const;

  std::uint64_t page_bytes_ = 64 * 1024;
  int page_shift_ = 16;
  std::vector<Managed> managed_;
  std::map<std::uint64_t, std::size_t> live_;                      // base -> index into managed_
  std::unordered_map<std::uint32_t, std::vector<NameId>> scopes_;  // thread -> open scopes
  std::unordered_map<std::uint64_t, LaunchInfo> launches_;         // correlation -> launch
  std::map<NameId, KernelStats> kernels_;
  std::map<NameId, KernelStats> scope_stats_;
  std::uint64_t current_ = ~0ull, ordinal_ = 0, ordinals_ = 0, launch_pages_ = 0;
  LaunchInfo current_info_{};
  std::uint64_t max_working_set_ = 0;
};

}  // namespace pasta::tools

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/tools/detail/uvm_hotness_impl.hpp>
#endif
