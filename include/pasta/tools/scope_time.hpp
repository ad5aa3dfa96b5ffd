// Host time spent in each marked region (PASTA_SCOPE, pasta::start/end,
// NVTX ranges): calls and inclusive time per scope name.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <unordered_map>
#include <vector>

#include <pasta/core/events.hpp>
#include <pasta/core/report.hpp>

namespace pasta::tools {

class ScopeTime {
 public:
  static constexpr std::string_view name = "scope_time";

  struct Stats {
    std::uint64_t calls = 0, total_ns = 0;
    std::uint64_t min_ns = std::numeric_limits<std::uint64_t>::max(), max_ns = 0;
  };

  void on(const ScopeBegin& e) {
    auto& stack = open_[e.thread];
    stack.resize(e.depth);  // a missed end leaves deeper entries behind
    stack.push_back({e.name, e.time_ns});
  }

  void on(const ScopeEnd& e) {
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

  const Stats* stats(std::string_view scope) const {
    for (const auto& [id, s] : by_name_)
      if (name_of(id) == scope) return &s;
    return nullptr;
  }

  void report(Report& out) const {
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

 private:
  struct Open {
    NameId name;
    std::uint64_t time_ns;
  };
  std::unordered_map<std::uint32_t, std::vector<Open>> open_;  // per thread
  std::unordered_map<NameId, Stats> by_name_;
  std::uint64_t unmatched_ = 0;
};

}  // namespace pasta::tools
