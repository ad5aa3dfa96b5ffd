// ScopeTime's event handlers and report (its table): inline in header-only
// builds; in a compiled build (core/detail/api.hpp) compiled once, in the
// runtime, so a unit that includes the header parses none of it.
#pragma once

#include <algorithm>

#include <pasta/tools/scope_time.hpp>

namespace pasta::tools {

PASTA_FUNC void ScopeTime::report(Report& out) const {
  out.page(100).nothing("no scopes recorded: mark regions with PASTA_SCOPE or NVTX ranges");
  std::vector<std::pair<NameId, Stats>> rows(by_name_.begin(), by_name_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.total_ns != b.second.total_ns ? a.second.total_ns > b.second.total_ns
                                                  : name_of(a.first) < name_of(b.first);
  });
  out.summary("scopes", rows.size());
  out.summary("ends without a matching begin", unmatched_);
  auto& t = out.table("scopes", "Time per scope (host, inclusive)",
                      {"scope", "calls", "total_ms", "mean_us", "min_us", "max_us"});
  t.precision(2, 3).precision(3, 2).precision(4, 2).precision(5, 2);
  for (const auto& [id, s] : rows)
    t.row(std::string(name_of(id)), s.calls, s.total_ns * 1e-6, s.total_ns * 1e-3 / s.calls,
          s.min_ns * 1e-3, s.max_ns * 1e-3);
}

PASTA_FUNC void ScopeTime::on(const ScopeBegin& e) {
  auto& stack = open_[e.thread];
  stack.resize(e.depth);  // a missed end leaves deeper entries behind
  stack.push_back({e.name, e.time_ns});
}

PASTA_FUNC void ScopeTime::on(const ScopeEnd& e) {
  auto& stack = open_[e.thread];
  if (stack.size() != e.depth + 1 || stack.back().name != e.name) {
    ++unmatched_;
    if (stack.size() > e.depth) stack.resize(e.depth);
    return;
  }
  const std::uint64_t begin = stack.back().time_ns;
  stack.pop_back();
  const std::uint64_t d = e.time_ns >= begin ? e.time_ns - begin : 0;
  Stats& s = by_name_[e.name];
  ++s.calls;
  s.total_ns += d;
  s.min_ns = std::min(s.min_ns, d);
  s.max_ns = std::max(s.max_ns, d);
}

PASTA_FUNC auto ScopeTime::stats(std::string_view scope) const -> const Stats* {
  for (const auto& [id, s] : by_name_)
    if (name_of(id) == scope) return &s;
  return nullptr;
}

}  // namespace pasta::tools
