#include <doctest/doctest.h>

#include <thread>

#include <pasta/pasta.hpp>

#include "../support.hpp"

using namespace pasta;

// Defined in scope_disabled.cpp, compiled with PASTA_DISABLE.
void scopes_in_a_disabled_translation_unit();

namespace {
using ScopeProf = Profiler<Direct, proc::Cpu, test::Collect, tools::ScopeTime>;
}  // namespace

TEST_CASE("PASTA_SCOPE and start/end nest, per thread, with depths") {
  test::TempDir dir;
  ScopeProf prof(test::quiet(dir));
  {
    PASTA_SCOPE("step");
    pasta::start("forward");
    pasta::end();
    { PASTA_SCOPE("backward"); }
  }
  const auto begins = prof.tool<test::Collect>().of<ScopeBegin>();
  const auto ends = prof.tool<test::Collect>().of<ScopeEnd>();
  REQUIRE(begins.size() == 3);
  REQUIRE(ends.size() == 3);
  CHECK(name_of(begins[0].name) == "step");
  CHECK(begins[0].depth == 0);
  CHECK(name_of(begins[1].name) == "forward");
  CHECK(begins[1].depth == 1);
  CHECK(name_of(ends[0].name) == "forward");
  CHECK(ends[0].depth == 1);
  CHECK(name_of(ends[2].name) == "step");
  CHECK(ends[2].depth == 0);
  CHECK(begins[0].thread == ends[2].thread);
  CHECK(ends[2].time_ns >= begins[0].time_ns);
  const auto* step = prof.tool<tools::ScopeTime>().stats("step");
  REQUIRE(step);
  CHECK(step->calls == 1);
  CHECK(prof.tool<tools::ScopeTime>().stats("forward")->calls == 1);
}

TEST_CASE("scopes on other threads carry their own thread id and depth") {
  test::TempDir dir;
  ScopeProf prof(test::quiet(dir));
  std::thread t([] {
    PASTA_SCOPE("worker");
    PASTA_SCOPE("inner");
  });
  t.join();
  const auto begins = prof.tool<test::Collect>().of<ScopeBegin>();
  REQUIRE(begins.size() == 2);
  CHECK(begins[1].depth == 1);
  CHECK(begins[0].thread != detail::thread_id());
  CHECK(prof.tool<tools::ScopeTime>().stats("inner")->calls == 1);
}

TEST_CASE("PASTA_SCOPE interns its name once per call site, pasta::Scope on every entry") {
  test::TempDir dir;
  ScopeProf prof(test::quiet(dir));
  for (std::string_view name : {"first", "second"}) {
    PASTA_SCOPE(name);  // a call site names one scope: its first name
    const pasta::Scope scope(name);
  }
  const auto begins = prof.tool<test::Collect>().of<ScopeBegin>();
  REQUIRE(begins.size() == 4);
  CHECK(name_of(begins[0].name) == "first");
  CHECK(name_of(begins[1].name) == "first");
  CHECK(name_of(begins[2].name) == "first");
  CHECK(name_of(begins[3].name) == "second");
}

TEST_CASE("end() without start() is reported once and ignored") {
  test::TempDir dir;
  test::CapturedLog log;
  ScopeProf prof(test::quiet(dir));
  pasta::end();
  pasta::end();
  CHECK(prof.tool<test::Collect>().events.empty());
  REQUIRE(log.lines().size() == 1);
  CHECK(log.lines()[0] == "pasta::end() without a matching pasta::start(); ignored");
}

TEST_CASE("scopes reach no profiler after it is destroyed") {
  test::TempDir dir;
  { ScopeProf prof(test::quiet(dir)); }
  PASTA_SCOPE("after");  // must not touch the dead profiler
  CHECK(detail::scope_registry().empty());
}

TEST_CASE("with PASTA_DISABLE, scopes emit nothing") {
  test::TempDir dir;
  ScopeProf prof(test::quiet(dir));
  scopes_in_a_disabled_translation_unit();
  CHECK(prof.tool<test::Collect>().events.empty());
  CHECK(prof.tool<tools::ScopeTime>().stats("disabled") == nullptr);
}
