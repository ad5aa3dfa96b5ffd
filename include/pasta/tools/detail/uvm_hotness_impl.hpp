// UvmHotness's event handlers and report (its tables and advice): inline in header-only
// builds; in a compiled build (core/detail/api.hpp) compiled once, in the
// runtime, so a unit that includes the header parses none of it.
#pragma once

#include <pasta/tools/uvm_hotness.hpp>

namespace pasta::tools {

PASTA_FUNC void UvmHotness::report(Report& out) const {
  out.page(70)
      .nothing("no managed (UVM) memory accessed: a program that uses cudaMallocManaged, run "
               "with --memory")
      .tables({"scopes", "allocations", "advice"});
  const_cast<UvmHotness*>(this)->close_launch();  // the launch in progress, if any
  std::uint64_t bytes = 0, touched = 0;
  for (const Managed& m : managed_) {
    bytes += m.bytes;
    touched += m.touched_pages;
  }
  out.summary("managed allocations", managed_.size());
  out.summary("managed bytes", bytes);
  out.summary("managed bytes touched by kernels (whole pages)", touched * page_bytes_);
  out.summary("largest working set of one launch (bytes)", max_working_set_ * page_bytes_);
  out.summary("page size (bytes)", page_bytes_);

  auto& allocs = out.table("allocations", "Managed allocations",
                           {"address", "size_bytes", "pages", "pages_touched", "accesses",
                            "devices", "first_kernel", "first_launch", "freed"});
  auto& advice = out.table("advice", "Advice", {"address", "call", "reason"});
  for (const Managed& m : managed_) {
    std::string devices;
    for (const auto& [d, n] : m.device_accesses)
      devices += fmt::format("{}{}", devices.empty() ? "" : ",", d);
    allocs.row(hex(m.base), m.bytes, m.page_count, m.touched_pages, m.accesses, devices,
               kernel(m.first_kernel), m.first_ordinal == ~0ull ? 0 : m.first_ordinal + 1, m.freed);
    advise(m, advice);
  }
  auto& kernels = out.table(
      "kernels", "Managed pages per kernel",
      {"kernel", "launches", "pages_touched", "largest_launch_pages", "largest_launch_bytes"});
  std::vector<std::pair<NameId, KernelStats>> ks(kernels_.begin(), kernels_.end());
  std::sort(ks.begin(), ks.end(), [](const auto& a, const auto& b) {
    return a.second.pages != b.second.pages ? a.second.pages > b.second.pages
                                            : a.first.value < b.first.value;
  });
  for (const auto& [k, s] : ks)
    kernels.row(kernel(k), s.launches, s.pages, s.max_pages, s.max_pages * page_bytes_);
  auto& scopes =
      out.table("scopes", "Managed pages per scope", {"scope", "launches", "pages_touched"});
  for (const auto& [scope, s] : scope_stats_)
    scopes.row(scope ? std::string(name_of(scope)) : std::string("(no scope)"), s.launches,
               s.pages);
}

PASTA_FUNC void UvmHotness::on(const MemFree& e) {
  if (auto it = live_.find(e.address); it != live_.end()) {
    managed_[it->second].freed = true;
    live_.erase(it);
  }
}

PASTA_FUNC void UvmHotness::on(const ScopeEnd& e) {
  auto& stack = scopes_[e.thread];
  if (!stack.empty()) stack.pop_back();
}

PASTA_FUNC void UvmHotness::on(const KernelLaunch& e) {
  const auto& stack = scopes_[e.thread];
  launches_[e.correlation] = {e.name, e.device, stack.empty() ? NameId{} : stack.back()};
}

PASTA_FUNC void UvmHotness::on(const KernelComplete& e) {
  if (e.correlation == current_) close_launch();
  launches_.erase(e.correlation);
}

PASTA_FUNC void UvmHotness::touch(std::uint64_t correlation, std::uint64_t alloc_base,
                                  std::uint64_t address, std::uint64_t n) {
  auto it = live_.find(alloc_base);
  if (!alloc_base || it == live_.end()) return;
  if (correlation != current_) {
    close_launch();
    current_ = correlation;
    ordinal_ = ordinals_++;
    if (auto l = launches_.find(correlation); l != launches_.end())
      current_info_ = l->second;
    else
      current_info_ = {};
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

PASTA_FUNC void UvmHotness::close_launch() {
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

PASTA_FUNC void UvmHotness::advise(const Managed& m, Table& advice) const {
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
  advice.row(
      ptr,
      fmt::format("cudaMemAdvise({}, {}, cudaMemAdviseSetPreferredLocation, "
                  "{{cudaMemLocationTypeDevice, {}}})",
                  ptr, m.bytes, d),
      m.device_accesses.size() == 1
          ? fmt::format("only device {} touches it: its pages stay there", d)
          : fmt::format("device {} makes {} of its {} accesses", d, home->second, m.accesses));
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

}  // namespace pasta::tools
