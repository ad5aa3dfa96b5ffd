// KernelFreq's event handlers and report (the tables it writes): inline in header-only
// builds; in a compiled build (core/detail/api.hpp) compiled once, in the
// runtime, so a unit that includes the header parses none of it.
#pragma once

#include <algorithm>
#include <pasta/core/detail/demangle.hpp>
#include <pasta/core/detail/fmt.hpp>

#include <pasta/tools/detail/units.hpp>
#include <pasta/tools/kernel_freq.hpp>

namespace pasta::tools {

PASTA_FUNC void KernelFreq::report(Report& out) const {
  out.page(30);
  std::vector<std::uint32_t> order;
  std::uint64_t calls = 0, total_ns = 0;
  for (std::uint32_t i = 0; i < by_name_.size(); ++i) {
    if (!by_name_[i].calls()) continue;
    order.push_back(i);
    calls += by_name_[i].calls();
    total_ns += by_name_[i].total_ns;
  }
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Stats &x = by_name_[a], &y = by_name_[b];
    if (x.calls() != y.calls()) return x.calls() > y.calls();
    return x.total_ns > y.total_ns;
  });
  out.summary("kernels", order.size());
  out.summary("launches", calls);
  if (total_ns) out.summary("device time (ms)", static_cast<double>(total_ns) / 1e6);

  auto& kernels = out.table("kernels", "Launches per kernel",
                            {"rank", "kernel", "launches", "timed", "total_ms", "mean_us", "min_us",
                             "max_us", "time_pct", "shapes", "top_shape", "signature"});
  kernels.files_only(11);
  kernels.precision(4, 3).precision(5, 2).precision(6, 2).precision(7, 2).precision(8, 1);
  auto& shapes =
      out.table("shapes", "Launches per kernel and shape", {"kernel", "grid", "block", "launches"});
  std::uint64_t rank = 0;
  for (std::uint32_t i : order) {
    const Stats& s = by_name_[i];
    const std::string signature = detail::demangle(name_of(NameId{i}));
    const std::string kernel = detail::short_kernel_name(signature);
    const auto top = std::max_element(s.shapes.begin(), s.shapes.end(),
                                      [](auto& a, auto& b) { return a.second < b.second; });
    const double us = 1e-3;
    kernels.row(++rank, kernel, s.calls(), s.timed, s.total_ns * detail::ms_per_ns,
                s.timed ? s.total_ns * us / s.timed : 0.0, s.timed ? s.min_ns * us : 0.0,
                s.max_ns * us, detail::share_pct(s.total_ns, total_ns), s.shapes.size(),
                top == s.shapes.end() ? std::string() : shape_text(top->first), signature);
    for (const auto& [shape, n] : s.shapes)
      shapes.row(kernel, dim_text(shape.grid), dim_text(shape.block), n);
  }
}

PASTA_FUNC void KernelFreq::on(const KernelLaunch& e) {
  Stats& s = at(e.name);
  ++s.launches;
  ++s.shapes[{e.grid, e.block}];
}

PASTA_FUNC void KernelFreq::on(const KernelComplete& e) {
  Stats& s = at(e.name);
  ++s.completions;
  if (s.completions > s.launches) ++s.shapes[{e.grid, e.block}];
  if (e.start_ns && e.end_ns >= e.start_ns) {
    const std::uint64_t d = e.end_ns - e.start_ns;
    ++s.timed;
    s.total_ns += d;
    s.min_ns = std::min(s.min_ns, d);
    s.max_ns = std::max(s.max_ns, d);
  }
}

PASTA_FUNC auto KernelFreq::stats(std::string_view kernel) const -> const Stats* {
  for (std::size_t i = 0; i < by_name_.size(); ++i)
    if (by_name_[i].calls() && name_of(NameId{static_cast<std::uint32_t>(i)}) == kernel)
      return &by_name_[i];
  return nullptr;
}

PASTA_FUNC auto KernelFreq::at(NameId id) -> Stats& {
  if (id.value >= by_name_.size()) by_name_.resize(id.value + 1);
  return by_name_[id.value];
}

}  // namespace pasta::tools
