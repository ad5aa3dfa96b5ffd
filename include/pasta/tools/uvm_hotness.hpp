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
#include <pasta/core/detail/demangle.hpp>
#include <pasta/core/detail/api.hpp>
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
  void on(const MemFree& e) {
    if (auto it = live_.find(e.address); it != live_.end()) {
      managed_[it->second].freed = true;
      live_.erase(it);
    }
  }

  void on(const ScopeBegin& e) { scopes_[e.thread].push_back(e.name); }
  void on(const ScopeEnd& e) {
    auto& stack = scopes_[e.thread];
    if (!stack.empty()) stack.pop_back();
  }

  void on(const KernelLaunch& e) {
    const auto& stack = scopes_[e.thread];
    launches_[e.correlation] = {e.name, e.device, stack.empty() ? NameId{} : stack.back()};
  }
  void on(const KernelComplete& e) {
    if (e.correlation == current_) close_launch();
    launches_.erase(e.correlation);
  }

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
             std::uint64_t n) {
    auto it = live_.find(alloc_base);
    if (!alloc_base || it == live_.end()) return;
    if (correlation != current_) {
      close_launch();
      current_ = correlation;
      ordinal_ = ordinals_++;
      if (auto l = launches_.find(correlation); l != launches_.end()) current_info_ = l->second;
      else current_info_ = {};
    }
    Managed& m = managed_[it->second];
    const std::uint64_t page = (address - m.base) >> page_shift_;
    if (page >= m.page_count) return;
    m.accesses += n;
    m.device_accesses[current_info_.device] += n;
    if (m.first_ordinal == ~0ull) {
      m.first_ordinal = ordinal_;
      m.first_kernel = current_info_.kernel;
    }
    if (m.last_touch[page] != ordinal_ + 1) {
      if (m.last_touch[page] == 0) {
        ++m.touched_pages;
        m.min_page = std::min(m.min_page, page);
        m.max_page = std::max(m.max_page, page);
      }
      m.last_touch[page] = ordinal_ + 1;
      ++launch_pages_;
    }
  }

  void close_launch() {
    if (current_ == ~0ull) return;
    KernelStats& k = kernels_[current_info_.kernel];
    ++k.launches;
    k.pages += launch_pages_;
    k.max_pages = std::max(k.max_pages, launch_pages_);
    KernelStats& s = scope_stats_[current_info_.scope];
    ++s.launches;
    s.pages += launch_pages_;
    max_working_set_ = std::max(max_working_set_, launch_pages_);
    launch_pages_ = 0;
    current_ = ~0ull;
  }

  void advise(const Managed& m, Table& advice) const {
    const std::string ptr = hex(m.base);
    if (m.device_accesses.empty()) {
      advice.row(ptr, "(none: no selected kernel touched it)",
                 "keep host-only data in host memory; managed memory helps only data the GPU "
                 "uses");
      return;
    }
    // The device that uses it most is its home; the others map it.
    auto home = std::max_element(m.device_accesses.begin(), m.device_accesses.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    const std::uint32_t d = home->first;
    advice.row(ptr,
               fmt::format("cudaMemAdvise({}, {}, cudaMemAdviseSetPreferredLocation, "
                           "{{cudaMemLocationTypeDevice, {}}})",
                           ptr, m.bytes, d),
               m.device_accesses.size() == 1
                   ? fmt::format("only device {} touches it: its pages stay there", d)
                   : fmt::format("device {} makes {} of its {} accesses", d, home->second,
                                 m.accesses));
    for (const auto& [other, n] : m.device_accesses)
      if (other != d)
        advice.row(ptr,
                   fmt::format("cudaMemAdvise({}, {}, cudaMemAdviseSetAccessedBy, "
                               "{{cudaMemLocationTypeDevice, {}}})",
                               ptr, m.bytes, other),
                   fmt::format("device {} also reads it ({} accesses): map it there instead of "
                               "migrating pages back and forth",
                               other, n));
    const std::uint64_t first = m.min_page * page_bytes_;
    const std::uint64_t span = std::min(m.bytes - first, (m.max_page - m.min_page + 1) * page_bytes_);
    const std::string start = first ? fmt::format("{} + {}", ptr, first) : ptr;
    advice.row(
        ptr,
        fmt::format("cudaMemPrefetchAsync({}, {}, {{cudaMemLocationTypeDevice, {}}}, 0, stream) "
                    "before launch {} ({})",
                    start, span, d, m.first_ordinal + 1, kernel(m.first_kernel)),
        m.touched_pages * 2 < m.page_count
            ? fmt::format("first touched on the GPU by {}; only {} of its {} pages are used: "
                          "prefetch that range, not the whole allocation",
                          kernel(m.first_kernel), m.touched_pages, m.page_count)
            : fmt::format("first touched on the GPU by {}: without a prefetch each of its {} "
                          "pages faults in on first touch",
                          kernel(m.first_kernel), m.touched_pages));
  }

  std::uint64_t page_bytes_ = 64 * 1024;
  int page_shift_ = 16;
  std::vector<Managed> managed_;
  std::map<std::uint64_t, std::size_t> live_;  // base -> index into managed_
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
