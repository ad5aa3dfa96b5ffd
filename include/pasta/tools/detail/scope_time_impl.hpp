// ScopeTime::report: its table; inline in header-only builds, compiled once
// otherwise (core/detail/api.hpp).
#pragma once

#include <algorithm>

#include <pasta/tools/scope_time.hpp>

namespace pasta::tools {

PASTA_FUNC void ScopeTime::report(Report& out) const {
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

}  // namespace pasta::tools
