#include <doctest/doctest.h>

#include <pasta/tools/kernel_freq.hpp>

#include "../support.hpp"

using namespace pasta;

namespace {
std::map<std::string, Cell> summary(const Report& r) {
  std::map<std::string, Cell> s;
  for (const auto& [k, v] : r.summary()) s[k] = v;
  return s;
}
}  // namespace

TEST_CASE("KernelFreq counts launches per kernel and per shape") {
  tools::KernelFreq f;
  for (int i = 0; i < 3; ++i) f.on(test::launch(i, "vectorAdd", {256, 1, 1}, {128, 1, 1}));
  f.on(test::launch(3, "vectorAdd", {512, 1, 1}, {128, 1, 1}));
  f.on(test::launch(4, "reduce", {8, 1, 1}, {64, 1, 1}));
  const auto* va = f.stats("vectorAdd");
  REQUIRE(va);
  CHECK(va->launches == 4);
  CHECK(va->calls() == 4);
  CHECK(va->shapes.size() == 2);
  CHECK(va->shapes.at({{256, 1, 1}, {128, 1, 1}}) == 3);
  CHECK(f.stats("reduce")->launches == 1);
  CHECK(f.stats("missing") == nullptr);
}

TEST_CASE("KernelFreq sums device time from completions with both timestamps") {
  tools::KernelFreq f;
  KernelComplete c = test::complete(1, 1000, 3000);
  c.name = intern("gemm");
  f.on(c);
  c.start_ns = 5000;
  c.end_ns = 6000;
  f.on(c);
  c.start_ns = 0;  // no timestamp: counted, not timed
  f.on(c);
  const auto* s = f.stats("gemm");
  CHECK(s->completions == 3);
  CHECK(s->timed == 2);
  CHECK(s->total_ns == 3000);
  CHECK(s->min_ns == 1000);
  CHECK(s->max_ns == 2000);
  CHECK(s->calls() == 3);  // device-only trace: completions stand in for launches
  CHECK(s->shapes.size() == 1);
}

TEST_CASE("a kernel seen by launch and completion is counted once") {
  tools::KernelFreq f;
  f.on(test::launch(1, "k", {2, 1, 1}, {32, 1, 1}));
  KernelComplete c = test::complete(1, 10, 20);
  c.name = intern("k");
  c.grid = {2, 1, 1};
  c.block = {32, 1, 1};
  f.on(c);
  CHECK(f.stats("k")->calls() == 1);
  CHECK(f.stats("k")->shapes.begin()->second == 1);
}

TEST_CASE("KernelFreq reports kernels by launches, with times and shapes") {
  tools::KernelFreq f;
  for (std::uint64_t i = 0; i < 4; ++i) {
    f.on(test::launch(i, "_Z9vectorAddPfS_S_i", {256, 1, 1}, {128, 1, 1}));
    KernelComplete c = test::complete(i, 1000 * (i + 1), 1000 * (i + 1) + 500);
    c.name = intern("_Z9vectorAddPfS_S_i");
    c.grid = {256, 1, 1};
    c.block = {128, 1, 1};
    f.on(c);
  }
  f.on(test::launch(9, "reduce", {8, 1, 1}, {64, 1, 1}));
  Report r("kernel_freq");
  f.report(r);
  auto s = summary(r);
  CHECK(std::get<std::uint64_t>(s["kernels"]) == 2);
  CHECK(std::get<std::uint64_t>(s["launches"]) == 5);
  CHECK(std::get<double>(s["device time (ms)"]) == doctest::Approx(0.002));
  const Table& t = r.tables()[0];
  REQUIRE(t.rows().size() == 2);
  const auto& top = t.rows()[0];
  CHECK(std::get<std::string>(top[1]) == "vectorAdd");
  CHECK(std::get<std::string>(top[11]) == "vectorAdd(float*, float*, float*, int)");
  CHECK(std::get<std::uint64_t>(top[2]) == 4);                // launches
  CHECK(std::get<std::uint64_t>(top[3]) == 4);                // timed
  CHECK(std::get<double>(top[4]) == doctest::Approx(0.002));  // total_ms
  CHECK(std::get<double>(top[5]) == doctest::Approx(0.5));    // mean_us
  CHECK(std::get<double>(top[8]) == doctest::Approx(100.0));  // time_pct
  CHECK(std::get<std::string>(top[10]) == "(256,1,1)x(128,1,1)");
  CHECK(std::get<std::string>(t.rows()[1][1]) == "reduce");
  CHECK(std::get<double>(t.rows()[1][4]) == 0.0);
  const Table& shapes = r.tables()[1];
  CHECK(shapes.rows().size() == 2);
}
