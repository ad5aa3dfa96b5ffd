#include <doctest/doctest.h>

#include <pasta/tools/scope_time.hpp>

#include "../support.hpp"

using namespace pasta;

TEST_CASE("ScopeTime sums inclusive time per scope name, per thread") {
  tools::ScopeTime t;
  const NameId step = intern("step"), fwd = intern("forward");
  t.on(ScopeBegin{.name = step, .thread = 1, .depth = 0, .time_ns = 1000});
  t.on(ScopeBegin{.name = fwd, .thread = 1, .depth = 1, .time_ns = 1100});
  t.on(ScopeBegin{.name = step, .thread = 2, .depth = 0, .time_ns = 1150});
  t.on(ScopeEnd{.name = fwd, .thread = 1, .depth = 1, .time_ns = 1400});
  t.on(ScopeEnd{.name = step, .thread = 1, .depth = 0, .time_ns = 2000});
  t.on(ScopeEnd{.name = step, .thread = 2, .depth = 0, .time_ns = 1250});
  const auto* s = t.stats("step");
  REQUIRE(s);
  CHECK(s->calls == 2);
  CHECK(s->total_ns == 1100);
  CHECK(s->min_ns == 100);
  CHECK(s->max_ns == 1000);
  CHECK(t.stats("forward")->total_ns == 300);
}

TEST_CASE("ScopeTime counts ends that match no begin and recovers") {
  tools::ScopeTime t;
  const NameId a = intern("a"), b = intern("b");
  t.on(ScopeEnd{.name = a, .thread = 1, .depth = 0, .time_ns = 5});
  t.on(ScopeBegin{.name = a, .thread = 1, .depth = 0, .time_ns = 10});
  t.on(ScopeEnd{.name = b, .thread = 1, .depth = 0, .time_ns = 20});  // wrong name
  t.on(ScopeBegin{.name = a, .thread = 1, .depth = 0, .time_ns = 30});
  t.on(ScopeEnd{.name = a, .thread = 1, .depth = 0, .time_ns = 35});
  Report r("scope_time");
  t.report(r);
  CHECK(std::get<std::uint64_t>(r.summary()[1].second) == 2);
  CHECK(t.stats("a")->calls == 1);
  CHECK(t.stats("a")->total_ns == 5);
}
