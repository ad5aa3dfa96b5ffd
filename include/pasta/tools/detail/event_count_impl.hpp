// EventCount::report: its table; inline in header-only builds, compiled once
// otherwise (core/detail/api.hpp).
#pragma once

#include <pasta/tools/event_count.hpp>

namespace pasta::tools {

PASTA_FUNC void EventCount::report(Report& out) const {
  out.page(120);
  std::uint64_t total = 0;
  auto& t = out.table("events", "Events by type", {"event", "count"});
  for (std::size_t k = 1; k < counts_.size(); ++k) {
    if (!counts_[k]) continue;
    t.row(detail::event_name(static_cast<EventKind>(k)), counts_[k]);
    total += counts_[k];
  }
  out.summary("events", total);
}

}  // namespace pasta::tools
