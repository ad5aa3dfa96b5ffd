// How many events of each type reached the tools: the first check that a
// handler sees what it should.
#pragma once

#include <array>
#include <cstdint>

#include <pasta/core/events.hpp>
#include <pasta/core/report.hpp>

namespace pasta::tools {

class EventCount {
 public:
  static constexpr std::string_view name = "event_count";

  // The event types traces carry (all_events): not ModuleImage, whose kind
  // (1000) lies past the table, and which only a tool naming it turns on.
  template <TraceEvent E>
  void on(const E&) {
    static_assert(static_cast<std::size_t>(E::kind) <= detail::event_type_count,
                  "an event kind past EventCount's table");
    ++counts_[static_cast<std::size_t>(E::kind)];
  }

  std::uint64_t count(EventKind k) const { return counts_[static_cast<std::size_t>(k)]; }

  void report(Report& out) const {
    std::uint64_t total = 0;
    auto& t = out.table("events", "Events by type", {"event", "count"});
    for (std::size_t k = 1; k < counts_.size(); ++k) {
      if (!counts_[k]) continue;
      t.row(detail::event_name(static_cast<EventKind>(k)), counts_[k]);
      total += counts_[k];
    }
    out.summary("events", total);
  }

 private:
  std::array<std::uint64_t, detail::event_type_count + 1> counts_{};
};

}  // namespace pasta::tools
