#include <doctest/doctest.h>

#include <pasta/tools/event_count.hpp>

#include "../support.hpp"

using namespace pasta;

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
