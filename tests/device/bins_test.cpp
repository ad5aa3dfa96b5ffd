#include <doctest/doctest.h>

#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include <pasta/device/detail/bins.hpp>

using namespace pasta;
using device::Bin;
using device::detail::Allocations;
using device::detail::Collect;
using device::detail::Range;

namespace {

using Event = std::variant<MemAlloc, MemFree, AccessHistogram>;

// The runtime, as the bins see it: a list of live allocations, and how
// often it was asked.
struct FakeRuntime {
  std::vector<Range> live;
  int queries = 0;
  std::optional<Range> operator()(std::uint64_t address) {
    ++queries;
    for (const Range& r : live)
      if (address >= r.base && address < r.base + r.bytes) return r;
    return std::nullopt;
  }
};

Bin bin(std::uint64_t address, std::uint64_t reads, std::uint64_t writes, std::uint64_t size = 4) {
  return {.key = (address >> 8) + 1,
          .reads = reads,
          .writes = writes,
          .read_bytes = reads * size,
          .write_bytes = writes * size};
}

std::vector<Event> run(std::vector<Bin> bins, const Collect& c, Allocations& a, FakeRuntime& rt) {
  std::vector<Event> out;
  device::detail::emit_bins(bins, c, a, std::ref(rt), [&](const auto& e) { out.emplace_back(e); });
  return out;
}

const Collect first{
    .correlation = 7, .device = 1, .page_bytes = 0x10000, .epoch = 1, .time_ns = 50};

}  // namespace

TEST_CASE("device annotations: bins become pages of the allocation they fall in") {
  FakeRuntime rt{.live = {{.base = 0x10000, .bytes = 0x30000}}};
  Allocations a;
  // Out of order, with an empty slot: sorted, skipped.
  const auto out =
      run({bin(0x20000, 5, 0), Bin{}, bin(0x10000, 2, 0, 8), bin(0x10100, 0, 1)}, first, a, rt);
  REQUIRE(out.size() == 3);
  const auto& alloc = std::get<MemAlloc>(out[0]);
  CHECK(alloc.address == 0x10000);
  CHECK(alloc.bytes == 0x30000);
  CHECK(alloc.device == 1);
  CHECK(alloc.mem_kind == MemKind::device);
  CHECK(alloc.time_ns == 50);
  const auto& p0 = std::get<AccessHistogram>(out[1]);
  CHECK(p0.correlation == 7);
  CHECK(p0.address == 0x10000);
  CHECK(p0.alloc_base == 0x10000);
  CHECK(p0.bin_bytes == 0x10000);
  CHECK(p0.reads == 2);
  CHECK(p0.read_bytes == 16);
  CHECK(p0.writes == 1);
  CHECK(p0.write_bytes == 4);
  const auto& p1 = std::get<AccessHistogram>(out[2]);
  CHECK(p1.address == 0x20000);
  CHECK(p1.reads == 5);
  CHECK(p1.writes == 0);
  CHECK(rt.queries == 1);  // one allocation, asked about once
}

TEST_CASE("device annotations: pages count from the allocation's base, not from address 0") {
  FakeRuntime rt{.live = {{.base = 0x10100, .bytes = 0x20000}}};
  Allocations a;
  const auto out = run({bin(0x10100, 1, 0), bin(0x200f0, 1, 0), bin(0x20100, 0, 3)}, first, a, rt);
  REQUIRE(out.size() == 3);
  // 0x10100 and 0x200f0 (bin 0x20000) share the first page [0x10100, 0x20100).
  CHECK(std::get<AccessHistogram>(out[1]).address == 0x10100);
  CHECK(std::get<AccessHistogram>(out[1]).reads == 2);
  CHECK(std::get<AccessHistogram>(out[2]).address == 0x20100);
  CHECK(std::get<AccessHistogram>(out[2]).writes == 3);
}

TEST_CASE("device annotations: a bin outside every allocation stays a bin of its own") {
  FakeRuntime rt{.live = {{.base = 0x10000, .bytes = 0x100}}};
  Allocations a;
  const auto out = run({bin(0x10000, 1, 0), bin(0x90000, 0, 2), bin(0x90100, 4, 0)}, first, a, rt);
  REQUIRE(out.size() == 4);
  CHECK(std::get<AccessHistogram>(out[1]).alloc_base == 0x10000);
  const auto& lone = std::get<AccessHistogram>(out[2]);
  CHECK(lone.address == 0x90000);
  CHECK(lone.alloc_base == 0);
  CHECK(lone.bin_bytes == 256);
  CHECK(lone.writes == 2);
  CHECK(std::get<AccessHistogram>(out[3]).address == 0x90100);
  CHECK(std::get<AccessHistogram>(out[3]).reads == 4);
  CHECK(a.size() == 1);
}

TEST_CASE("device annotations: a known allocation is checked once per collect") {
  FakeRuntime rt{.live = {{.base = 0x10000, .bytes = 0x20000}}};
  Allocations a;
  run({bin(0x10000, 1, 0), bin(0x20000, 1, 0)}, first, a, rt);
  CHECK(rt.queries == 1);

  SUBCASE("unchanged: no new events but the pages") {
    Collect next = first;
    next.epoch = 2;
    const auto out = run({bin(0x10000, 1, 0), bin(0x28000, 1, 0)}, next, a, rt);
    CHECK(rt.queries == 2);
    REQUIRE(out.size() == 2);
    CHECK(std::holds_alternative<AccessHistogram>(out[0]));
    CHECK(std::holds_alternative<AccessHistogram>(out[1]));
  }
  SUBCASE("freed and allocated again at the same base: MemFree, then MemAlloc") {
    rt.live = {{.base = 0x10000, .bytes = 0x8000, .kind = MemKind::managed}};
    Collect next = first;
    next.epoch = 2;
    next.time_ns = 90;
    const auto out = run({bin(0x10000, 3, 0)}, next, a, rt);
    REQUIRE(out.size() == 3);
    const auto& freed = std::get<MemFree>(out[0]);
    CHECK(freed.address == 0x10000);
    CHECK(freed.bytes == 0x20000);
    CHECK(freed.time_ns == 90);
    const auto& again = std::get<MemAlloc>(out[1]);
    CHECK(again.bytes == 0x8000);
    CHECK(again.mem_kind == MemKind::managed);
    CHECK(std::get<AccessHistogram>(out[2]).reads == 3);
    CHECK(a.size() == 1);
  }
  SUBCASE("a new allocation over a cached one replaces it") {
    rt.live = {{.base = 0x8000, .bytes = 0x10000}};
    Collect next = first;
    next.epoch = 2;
    const auto out = run({bin(0x8000, 1, 0)}, next, a, rt);
    REQUIRE(out.size() == 3);
    CHECK(std::get<MemFree>(out[0]).address == 0x10000);
    CHECK(std::get<MemAlloc>(out[1]).address == 0x8000);
    CHECK(a.size() == 1);
  }
}

namespace {

// A page a launch counted on known range slot `slot`.
Bin page(std::uint64_t slot, std::uint64_t reads, std::uint64_t writes) {
  return {.key = slot + 1,
          .reads = reads,
          .writes = writes,
          .read_bytes = reads * 4,
          .write_bytes = writes * 4};
}

std::pair<std::vector<Event>, std::uint64_t> run_pages(std::vector<Bin> pages,
                                                       const std::vector<device::KnownRange>& known,
                                                       const Collect& c, Allocations& a,
                                                       FakeRuntime& rt) {
  std::vector<Event> out;
  const auto moved = device::detail::emit_pages(pages, known, c, a, std::ref(rt),
                                                [&](const auto& e) { out.emplace_back(e); });
  return {out, moved};
}

}  // namespace

TEST_CASE("device annotations: learnt allocations become the device's known ranges") {
  FakeRuntime rt{.live = {{.base = 0x90000, .bytes = 0x100}, {.base = 0x10100, .bytes = 0x20001}}};
  Allocations a;
  CHECK(a.version() == 0);
  CHECK(a.known(0x10000).ranges.empty());
  run({bin(0x90000, 1, 0), bin(0x10100, 1, 0)}, first, a, rt);
  CHECK(a.version() == 2);
  const auto known = a.known(0x10000);
  CHECK(known.version == 2);
  CHECK(known.pages == 4);
  REQUIRE(known.ranges.size() == 2);
  // By base; 0x20001 bytes take three pages of 0x10000, 0x100 bytes one.
  CHECK(known.ranges[0].base == 0x10100);
  CHECK(known.ranges[0].end == 0x30101);
  CHECK(known.ranges[0].first_page == 0);
  CHECK(known.ranges[1].base == 0x90000);
  CHECK(known.ranges[1].end == 0x90100);
  CHECK(known.ranges[1].first_page == 3);
  Collect next = first;
  next.epoch = 2;
  run({bin(0x10100, 1, 0)}, next, a, rt);
  CHECK(a.version() == 2);  // nothing learnt, nothing dropped
}

TEST_CASE("device annotations: pages counted on known ranges become histograms of their page") {
  FakeRuntime rt{.live = {{.base = 0x10100, .bytes = 0x20001}, {.base = 0x90000, .bytes = 0x100}}};
  Allocations a;
  run({bin(0x10100, 1, 0), bin(0x90000, 1, 0)}, first, a, rt);
  const auto known = a.known(0x10000).ranges;
  Collect next = first;
  next.epoch = 2;
  // Out of order; slot 2 is the third page of the first range, slot 3 the second range.
  const auto [out, moved] =
      run_pages({page(3, 0, 7), page(0, 2, 1), page(2, 5, 0)}, known, next, a, rt);
  CHECK(moved == 0);
  REQUIRE(out.size() == 3);
  const auto& p0 = std::get<AccessHistogram>(out[0]);
  CHECK(p0.correlation == 7);
  CHECK(p0.address == 0x10100);
  CHECK(p0.alloc_base == 0x10100);
  CHECK(p0.bin_bytes == 0x10000);
  CHECK(p0.reads == 2);
  CHECK(p0.writes == 1);
  CHECK(p0.read_bytes == 8);
  CHECK(p0.write_bytes == 4);
  CHECK(std::get<AccessHistogram>(out[1]).address == 0x30100);
  CHECK(std::get<AccessHistogram>(out[1]).reads == 5);
  CHECK(std::get<AccessHistogram>(out[2]).address == 0x90000);
  CHECK(std::get<AccessHistogram>(out[2]).alloc_base == 0x90000);
  CHECK(std::get<AccessHistogram>(out[2]).writes == 7);
  CHECK(rt.queries == 4);  // each allocation once in each of the two collects
}

TEST_CASE("device annotations: a known range that changed has its pages charged by page") {
  FakeRuntime rt{.live = {{.base = 0x10000, .bytes = 0x40000}}};
  Allocations a;
  run({bin(0x10000, 1, 0)}, first, a, rt);
  const auto known = a.known(0x10000).ranges;
  // Freed; a smaller allocation at 0x30000 now holds the third page's first byte.
  rt.live = {{.base = 0x30000, .bytes = 0x8000}};
  Collect next = first;
  next.epoch = 2;
  next.time_ns = 90;
  const auto [out, moved] = run_pages({page(2, 3, 1), page(0, 4, 0)}, known, next, a, rt);
  CHECK(moved == 8);
  REQUIRE(out.size() == 4);
  // Page 0: nothing holds 0x10000 now; the stale allocation is dropped.
  CHECK(std::get<MemFree>(out[0]).address == 0x10000);
  CHECK(std::get<AccessHistogram>(out[1]).address == 0x10000);
  CHECK(std::get<AccessHistogram>(out[1]).alloc_base == 0);
  CHECK(std::get<AccessHistogram>(out[1]).reads == 4);
  CHECK(std::get<MemAlloc>(out[2]).address == 0x30000);
  CHECK(std::get<AccessHistogram>(out[3]).address == 0x30000);
  CHECK(std::get<AccessHistogram>(out[3]).alloc_base == 0x30000);
  CHECK(std::get<AccessHistogram>(out[3]).reads == 3);
  CHECK(std::get<AccessHistogram>(out[3]).writes == 1);
}
