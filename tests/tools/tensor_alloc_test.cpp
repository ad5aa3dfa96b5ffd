#include <doctest/doctest.h>

#include <algorithm>

#include <pasta/core/concepts.hpp>
#include <pasta/tools/tensor_alloc.hpp>

#include "../support.hpp"

using namespace pasta;
using test::cell;

static_assert(Tool<tools::TensorAlloc>);

namespace {
constexpr double mib = 1.0 / (1024 * 1024);

pasta::TensorAlloc alloc(std::uint64_t address, std::uint64_t bytes, std::uint64_t t,
                         std::uint64_t op, std::uint32_t device = 0,
                         std::uint64_t total_allocated = 0) {
  return {.address = address,
          .bytes = bytes,
          .device = device,
          .total_allocated = total_allocated,
          .time_ns = t,
          .op = op,
          .thread = 7};
}
TensorFree free_at(std::uint64_t address, std::uint64_t t) {
  return {.address = address, .time_ns = t};
}
}  // namespace

TEST_CASE("TensorAlloc tracks live bytes per device, the peak and the operator that set it") {
  tools::TensorAlloc a;
  const std::uint32_t cpu = tools::TensorAlloc::cpu_device;
  a.on(OpBegin{.id = 1, .name = intern("aten::empty"), .thread = 7, .time_ns = 1000});
  a.on(alloc(0x1000, 1024, 2000, 1, 0, 1024));
  a.on(alloc(0x2000, 4096, 3000, 1, 0, 5120));
  a.on(OpEnd{.id = 1, .thread = 7, .time_ns = 3500});
  a.on(OpBegin{.id = 2, .name = intern("aten::mm"), .thread = 7, .time_ns = 4000});
  a.on(alloc(0x3000, 600, 5000, 2, 0, 10000));  // the allocator counts its own rounding
  a.on(OpEnd{.id = 2, .thread = 7, .time_ns = 5500});
  a.on(free_at(0x1000, 52'000));     // lived 50 us
  a.on(free_at(0x2000, 5'003'000));  // lived 5 ms
  a.on(free_at(0x9000, 6'000'000));  // allocated before profiling
  a.on(alloc(0x4000, 100, 7'000'000, 0, cpu));

  const auto* d0 = a.device_stats(0);
  REQUIRE(d0);
  CHECK(d0->live_bytes == 600);
  CHECK(d0->live_tensors == 1);
  CHECK(d0->peak_bytes == 1024 + 4096 + 600);
  CHECK(d0->peak_ns == 5000);
  CHECK(name_of(d0->peak_op) == "aten::mm");
  CHECK(d0->allocator_peak == 10000);
  CHECK(d0->allocations == 3);
  CHECK(d0->frees == 2);
  const auto* host = a.device_stats(cpu);
  REQUIRE(host);
  CHECK(host->peak_bytes == 100);
  CHECK_FALSE(host->peak_op);
  CHECK(a.device_stats(1) == nullptr);
  CHECK(a.unknown_frees() == 1);
  CHECK(a.sizes()[0].count == 1);  // <= 512 B: 100
  CHECK(a.sizes()[0].bytes == 100);
  CHECK(a.sizes()[1].count == 2);  // <= 1 KiB: 600 and 1024
  CHECK(a.sizes()[1].bytes == 1624);
  CHECK(a.sizes()[3].count == 1);      // <= 4 KiB: 4096
  CHECK(a.lifetimes()[1].count == 1);  // < 100 us
  CHECK(a.lifetimes()[1].bytes == 1024);
  CHECK(a.lifetimes()[3].count == 1);  // < 10 ms
  CHECK(a.op_stats("aten::empty").count == 2);
  CHECK(a.op_stats("aten::empty").bytes == 5120);
  CHECK(a.op_stats("(no operator)").bytes == 100);
  using P = tools::TensorAlloc::Point;
  CHECK(a.timeline(0) ==
        std::vector<P>{{2000, 1024}, {3000, 5120}, {5000, 5720}, {52'000, 4696}, {5'003'000, 600}});

  Report r("tensor_alloc");
  a.report(r);
  auto sum = test::summary(r);
  CHECK(std::get<std::uint64_t>(sum["allocations"]) == 4);
  CHECK(std::get<std::uint64_t>(sum["frees"]) == 2);
  CHECK(std::get<std::uint64_t>(sum["frees of memory allocated before profiling"]) == 1);
  CHECK(std::get<std::uint64_t>(sum["tensors live at the end"]) == 2);
  CHECK(std::get<std::uint64_t>(sum["bytes live at the end"]) == 700);

  const Table& dev = test::table(r, "devices");
  REQUIRE(dev.rows().size() == 2);
  CHECK(cell<std::uint64_t>(dev, 0, 0) == 0);
  CHECK(cell<double>(dev, 0, 1) == doctest::Approx(5720 * mib));
  CHECK(cell<double>(dev, 0, 2) == doctest::Approx(0.004));  // from the first event, at 1000 ns
  CHECK(cell<std::string>(dev, 0, 3) == "aten::mm");
  CHECK(cell<double>(dev, 0, 4) == doctest::Approx(10000 * mib));
  CHECK(cell<std::uint64_t>(dev, 0, 5) == 3);
  CHECK(cell<std::uint64_t>(dev, 0, 6) == 2);
  CHECK(cell<double>(dev, 0, 7) == doctest::Approx(600 * mib));
  CHECK(cell<std::string>(dev, 1, 0) == "cpu");
  CHECK(cell<double>(dev, 1, 2) == doctest::Approx(6.999));
  CHECK(cell<std::string>(dev, 1, 3) == "(no operator)");

  const Table& sizes = test::table(r, "sizes");
  REQUIRE(sizes.rows().size() == 3);
  CHECK(cell<std::string>(sizes, 0, 0) == "<= 512 B");
  CHECK(cell<std::string>(sizes, 1, 0) == "<= 1 KiB");
  CHECK(cell<std::uint64_t>(sizes, 1, 1) == 1024);
  CHECK(cell<std::uint64_t>(sizes, 1, 2) == 2);
  CHECK(cell<std::uint64_t>(sizes, 1, 3) == 1624);
  CHECK(cell<std::string>(sizes, 2, 0) == "<= 4 KiB");

  const Table& life = test::table(r, "lifetimes");
  REQUIRE(life.rows().size() == 7);
  CHECK(cell<std::string>(life, 1, 0) == "< 100 us");
  CHECK(cell<std::uint64_t>(life, 1, 1) == 1);
  CHECK(cell<std::uint64_t>(life, 1, 2) == 1024);
  CHECK(cell<std::string>(life, 3, 0) == "< 10 ms");
  CHECK(cell<std::uint64_t>(life, 3, 2) == 4096);
  CHECK(cell<std::uint64_t>(life, 0, 1) == 0);
  CHECK(cell<std::string>(life, 6, 0) == ">= 1 s");

  const Table& ops = test::table(r, "operators");
  REQUIRE(ops.rows().size() == 3);
  CHECK(cell<std::string>(ops, 0, 0) == "aten::empty");
  CHECK(cell<std::uint64_t>(ops, 0, 1) == 2);
  CHECK(cell<std::uint64_t>(ops, 0, 2) == 5120);
  CHECK(cell<std::string>(ops, 1, 0) == "aten::mm");
  CHECK(cell<std::string>(ops, 2, 0) == "(no operator)");

  const Table& tl = test::table(r, "timeline");
  REQUIRE(tl.rows().size() == 6);
  CHECK(cell<double>(tl, 0, 0) == doctest::Approx(0.001));
  CHECK(cell<std::uint64_t>(tl, 0, 1) == 0);
  CHECK(cell<double>(tl, 2, 2) == doctest::Approx(5720 * mib));
  CHECK(cell<std::string>(tl, 5, 1) == "cpu");
  CHECK(cell<double>(tl, 5, 2) == doctest::Approx(100 * mib));
}

TEST_CASE("TensorAlloc's timeline halves when full and keeps the peak") {
  tools::TensorAlloc a;
  // 3000 allocations of one byte, then 2000 frees: the peak, 3000 bytes, at event 3000.
  for (std::uint64_t i = 1; i <= 3000; ++i) a.on(alloc(0x10000 + 16 * i, 1, i, 0));
  for (std::uint64_t i = 1; i <= 2000; ++i) a.on(free_at(0x10000 + 16 * i, 3000 + i));
  const auto points = a.timeline(0);
  // 4096 events filled it and it halved to 2048, each point the larger of two
  // events; the last 904 events came two to a point.
  CHECK(points.size() == 2048 + 452);
  using P = tools::TensorAlloc::Point;
  CHECK(points.front() == P{2, 2});
  CHECK(std::find(points.begin(), points.end(), P{3000, 3000}) != points.end());
  CHECK(std::max_element(points.begin(), points.end(), [](const P& x, const P& y) {
          return x.live_bytes < y.live_bytes;
        })->live_bytes == 3000);
  CHECK(points.back() == P{4999, 1001});
  CHECK(a.device_stats(0)->peak_bytes == 3000);
  CHECK(a.device_stats(0)->peak_ns == 3000);

  SUBCASE("an odd event waits as the point being merged") {
    a.on(alloc(0x1, 1, 6000, 0));
    const auto more = a.timeline(0);
    CHECK(more.size() == 2048 + 452 + 1);
    CHECK(more.back() == P{6000, 1001});
  }
}

TEST_CASE("TensorAlloc: an allocation over a live tensor ends it, its free was missed") {
  tools::TensorAlloc a;
  a.on(alloc(0x1000, 256, 10, 0));
  a.on(alloc(0x1000, 512, 20, 0));
  a.on(alloc(0x1100, 64, 30, 0));  // inside the 512 bytes too
  CHECK(a.replaced() == 2);
  CHECK(a.device_stats(0)->live_bytes == 64);
  CHECK(a.device_stats(0)->live_tensors == 1);
  CHECK(a.device_stats(0)->peak_bytes == 512);
  a.on(free_at(0x1000, 40));  // already ended
  CHECK(a.unknown_frees() == 1);
}

TEST_CASE("TensorAlloc names an operator whose begin it did not see") {
  tools::TensorAlloc a;
  a.on(alloc(0x1000, 256, 10, 42));
  CHECK(a.op_stats("(operator not seen)").count == 1);
}

TEST_CASE("TensorAlloc names the line of the program that made each tensor, and the peak's") {
  tools::TensorAlloc a;
  a.on(OpBegin{.id = 1, .name = intern("aten::empty"), .thread = 7, .time_ns = 1000,
               .source = intern("model.py:12")});
  a.on(alloc(0x1000, 1024, 2000, 1));
  a.on(OpEnd{.id = 1, .thread = 7, .time_ns = 2500});
  a.on(OpBegin{.id = 2, .name = intern("aten::zeros"), .thread = 7, .time_ns = 3000,
               .source = intern("model.py:40")});
  a.on(alloc(0x2000, 4096, 3100, 2));
  a.on(alloc(0x3000, 4096, 3200, 2));  // the peak: 9216 bytes live
  a.on(OpEnd{.id = 2, .thread = 7, .time_ns = 3500});
  a.on(free_at(0x2000, 3600));
  a.on(OpBegin{.id = 3, .name = intern("aten::empty"), .thread = 7, .time_ns = 4000});
  a.on(alloc(0x4000, 64, 4100, 3));  // an operator without a line
  Report r("tensor_alloc");
  a.report(r);
  const auto& lines = test::table(r, "lines");
  REQUIRE(lines.rows().size() == 2);
  CHECK(test::text(lines, 0, "source") == "model.py:40");
  CHECK(test::text(lines, 0, "allocations") == "2");
  CHECK(test::text(lines, 0, "bytes") == "8192");
  CHECK(test::text(lines, 1, "source") == "model.py:12");
  CHECK(test::text(test::table(r, "devices"), 0, "line_at_peak") == "model.py:40");
}
