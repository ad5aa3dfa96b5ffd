// How many events of each type reached the tools: the first check that a
// handler sees what it should.
#pragma once

#include <array>
#include <cstdint>

#include <pasta/core/detail/api.hpp>
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

  void report(Report& out) const;  // tools/detail/event_count_impl.hpp

 private:
  std::array<std::uint64_t, detail::event_type_count + 1> counts_{};
};

}  // namespace pasta::tools

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/tools/detail/event_count_impl.hpp>
#endif
