// Host time spent in each marked region (PASTA_SCOPE, pasta::start/end,
// NVTX ranges): calls and inclusive time per scope name.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <unordered_map>
#include <vector>

#include <pasta/core/detail/api.hpp>
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

  void report(Report& out) const;

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

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/tools/detail/scope_time_impl.hpp>
#endif
