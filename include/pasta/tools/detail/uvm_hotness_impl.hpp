// UvmHotness::report: its tables and advice; inline in header-only builds, compiled once
// otherwise (core/detail/api.hpp).
#pragma once

#include <pasta/tools/uvm_hotness.hpp>

namespace pasta::tools {

PASTA_FUNC void UvmHotness::report(Report& out) const {
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

}  // namespace pasta::tools
