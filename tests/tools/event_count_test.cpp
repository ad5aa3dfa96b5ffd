#include <doctest/doctest.h>


#include <pasta/pasta.hpp>
#include <pasta/tools/event_count.hpp>

#include "../support.hpp"

using namespace pasta;

// ModuleImage (kind 1000) lives only in the process: EventCount neither takes
// it nor makes a handler copy module images for it.
static_assert(!ToolAccepts<tools::EventCount, ModuleImage>);
static_assert(!Profiler<Direct, proc::Cpu, tools::EventCount>::wants<ModuleImage>());

TEST_CASE("EventCount counts each event type and reports only the types it saw") {
  tools::EventCount c;
  c.on(test::launch(1, "k"));
  c.on(test::launch(2, "k"));
  c.on(MemAlloc{});
  c.on(TensorFree{});
  CHECK(c.count(EventKind::kernel_launch) == 2);
  CHECK(c.count(EventKind::mem_alloc) == 1);
  CHECK(c.count(EventKind::memcpy) == 0);
  Report r("event_count");
  c.report(r);
  const auto& rows = r.tables()[0].rows();
  REQUIRE(rows.size() == 3);
  CHECK(std::get<std::string>(rows[0][0]) == "KernelLaunch");
  CHECK(std::get<std::uint64_t>(rows[0][1]) == 2);
  CHECK(std::get<std::string>(rows[2][0]) == "TensorFree");
  CHECK(std::get<std::uint64_t>(r.summary()[0].second) == 4);
}

TEST_CASE("EventCount has a row for every event type a trace carries") {
  tools::EventCount c;
  for_each_type(all_events, [&](auto type) { c.on(typename decltype(type)::type{}); });
  Report r("event_count");
  c.report(r);
  CHECK(r.tables()[0].rows().size() == detail::event_type_count);
  CHECK(std::get<std::uint64_t>(r.summary()[0].second) == detail::event_type_count);
}
