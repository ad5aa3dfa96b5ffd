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

  void on(const ScopeBegin& e);

  void on(const ScopeEnd& e);

  const Stats* stats(std::string_view scope) const;

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
