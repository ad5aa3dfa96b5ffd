// OpSummary::report: its tables; inline in header-only builds, compiled once
// otherwise (core/detail/api.hpp).
#pragma once

#include <pasta/tools/op_summary.hpp>

namespace pasta::tools {

PASTA_FUNC void OpSummary::report(Report& out) const {
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; i < by_name_.size(); ++i)
    if (seen(by_name_[i]) && !only_launches(by_name_[i])) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Stats &x = by_name_[a], &y = by_name_[b];
    if (x.device_self_ns != y.device_self_ns) return x.device_self_ns > y.device_self_ns;
    if (x.calls != y.calls) return x.calls > y.calls;
    return name_of(NameId{a}) < name_of(NameId{b});
  });
  std::uint64_t calls = 0;
  for (std::uint32_t i : order) calls += by_name_[i].calls;
  const double ms = 1e-6;
  out.summary("operators", order.size());
  out.summary("calls", calls);
  out.summary("kernels", kernels_);
  out.summary("kernels attributed to an operator", attributed_);
  out.summary("kernels attributed (%)", kernels_ ? 100.0 * attributed_ / kernels_ : 0.0);
  out.summary("kernels outside every operator", unattributed_kernels_);
  out.summary("kernels by attribution: direct operator", direct_);
  out.summary("kernels by attribution: fused by compiler", fused_kernels_);
  out.summary("kernels by attribution: unattributed", unattributed_total());
  out.summary("kernels whose operator record was evicted", evicted_.kernels);
  out.summary("copies and memsets outside every operator", unattributed_copies_);
  out.summary("device time (ms)", device_ns_ * ms);
  if (evicted_.kernels || evicted_.copies)
    out.note("kernels and copies that completed after more than " + std::to_string(table_slots) +
             " later operators began are listed as '(operator record evicted)'");
  if (!compiled_.empty())
    out.note(
        "a compiled kernel that fuses N operators (as its compiler's metadata names them) is "
        "charged to each in equal shares, 1/N of its device time, as self and total time; its "
        "launching call, named after the kernel, and that call's callers get the whole time in "
        "device_total_ms only");

  auto& ops = out.table("operators", "Operators by device time",
                        {"rank", "operator", "calls", "kernels", "copies", "device_self_ms",
                         "device_total_ms", "host_self_ms", "host_total_ms", "device_self_pct",
                         "fused_kernels", "fused_ms", "attribution"});
  for (std::size_t c = 5; c <= 8; ++c) ops.precision(c, 3);
  ops.precision(9, 1);
  ops.precision(11, 3);
  auto pct = [&](std::uint64_t ns) { return device_ns_ ? 100.0 * ns / device_ns_ : 0.0; };
  std::uint64_t rank = 0;
  for (std::uint32_t i : order) {
    const Stats& s = by_name_[i];
    ops.row(++rank, std::string(name_of(NameId{i})), s.calls, s.kernels, s.copies,
            s.device_self_ns * ms, s.device_total_ns * ms, s.host_self_ns * ms,
            s.host_total_ns * ms, pct(s.device_self_ns), s.fused_kernels, s.fused_ns * ms,
            std::string(attribution(s)));
  }
  if (evicted_.kernels || evicted_.copies)
    ops.row(Cell{}, "(operator record evicted)", Cell{}, evicted_.kernels, evicted_.copies,
            evicted_.device_self_ns * ms, evicted_.device_self_ns * ms, Cell{}, Cell{},
            pct(evicted_.device_self_ns), Cell{}, Cell{}, Cell{});

  std::vector<std::pair<NameId, KernelStats>> kernels(unattributed_.begin(), unattributed_.end());
  std::sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) {
    if (a.second.device_ns != b.second.device_ns) return a.second.device_ns > b.second.device_ns;
    if (a.second.launches != b.second.launches) return a.second.launches > b.second.launches;
    return name_of(a.first) < name_of(b.first);
  });
  auto& outside = out.table("unattributed", "Kernels launched outside every operator",
                            {"kernel", "launches", "device_ms"});
  outside.precision(2, 3);
  for (const auto& [k, s] : kernels)
    outside.row(pasta::detail::short_kernel_name(pasta::detail::demangle(name_of(k))), s.launches,
                s.device_ns * ms);

  if (!compiled_.empty()) {
    std::vector<std::size_t> by_time(compiled_.size());
    for (std::size_t i = 0; i < by_time.size(); ++i) by_time[i] = i;
    std::stable_sort(by_time.begin(), by_time.end(), [&](std::size_t a, std::size_t b) {
      return compiled_[a].device_ns > compiled_[b].device_ns;
    });
    auto& ck =
        out.table("compiled_kernels", "Compiled kernels and the operators their compiler fused",
                  {"kernel", "source", "attribution", "operators", "launches", "kernels",
                   "device_ms", "graph"});
    ck.precision(6, 3);
    for (std::size_t i : by_time) {
      const CompiledStats& c = compiled_[i];
      ck.row(std::string(name_of(c.kernel)), std::string(name_of(c.source)),
             c.ops.empty() ? "unattributed" : "fused by compiler", std::string(name_of(c.fused)),
             c.launches, c.kernels, c.device_ns * ms, std::string(name_of(c.graph)));
    }
  }

  if (inputs_.empty()) return;
  std::vector<std::pair<std::uint64_t, InputStats>> shapes(inputs_.begin(), inputs_.end());
  std::sort(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) {
    if (a.second.device_self_ns != b.second.device_self_ns)
      return a.second.device_self_ns > b.second.device_self_ns;
    if (a.second.calls != b.second.calls) return a.second.calls > b.second.calls;
    return a.first < b.first;
  });
  auto& in = out.table("inputs", "Operators by input shapes",
                       {"operator", "inputs", "calls", "device_self_ms"});
  in.precision(3, 3);
  for (const auto& [key, s] : shapes)
    in.row(std::string(name_of(NameId{static_cast<std::uint32_t>(key >> 32)})),
           std::string(name_of(NameId{static_cast<std::uint32_t>(key)})), s.calls,
           s.device_self_ns * ms);
}

}  // namespace pasta::tools
