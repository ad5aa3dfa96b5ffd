#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include <pasta/core/access_regions.hpp>

using namespace pasta;
namespace region = pasta::detail::region;

TEST_CASE("access regions: sorted bounds, an address's region is the bounds at or below it") {
  AccessRegions r;
  r.range(0x1000, 0x1000);
  r.range(0x1400, 0x100);   // a tensor inside the allocation
  r.range(0x1000, 0x1000);  // given twice
  r.build();
  CHECK(std::vector<std::uint64_t>(r.bounds().begin(), r.bounds().end()) ==
        std::vector<std::uint64_t>{0x1000, 0x1400, 0x1500, 0x2000});
  CHECK(r.regions() == 5);
  const region::Table t = r.table();
  CHECK(region::index_of(t, 0xfff) == 0);
  CHECK(region::index_of(t, 0x1000) == 1);
  CHECK(region::index_of(t, 0x13ff) == 1);
  CHECK(region::index_of(t, 0x1400) == 2);
  CHECK(region::index_of(t, 0x14ff) == 2);
  CHECK(region::index_of(t, 0x1500) == 3);
  CHECK(region::index_of(t, 0x2000) == 4);
  CHECK(region::holding(t, 2, 0x1400) == 0);  // no strided view: no bits
}

TEST_CASE("access regions: a strided view's elements and gaps get different keys") {
  // q of a fused qkv: 2 rows of 4 floats, rows 12 floats apart, at +0;
  // k the same at +16 B. Both span [base, base + 64).
  const std::vector<region::Dim> dims{{2, 12}, {4, 1}};
  AccessRegions r;
  r.range(0x1000, 96);
  r.strided(0x1000, 64, 4, dims);
  r.strided(0x1010, 64, 4, dims);
  r.strided(0x1010, 64, 4, dims);  // the same view twice is one view
  r.build();
  CHECK(r.views().size() == 3);
  const region::Table t = r.table();
  const std::uint32_t both = region::index_of(t, 0x1010);  // where q's and k's spans overlap
  CHECK(t.checks[both].count == 2);
  // q[1][2] at +(12 + 2) * 4, k[1][1] at +(12 + 5) * 4, v's element at +9 * 4: a gap of both.
  CHECK(region::holding(t, both, 0x1000 + 14 * 4) == 0b01);
  CHECK(region::holding(t, both, 0x1000 + 17 * 4) == 0b10);
  CHECK(region::holding(t, both, 0x1000 + 9 * 4) == 0);
  const auto key = [&](std::uint64_t address) { return region::access_key(t, 0x230, 0, address); };
  CHECK(key(0x1000 + 14 * 4) != key(0x1000 + 17 * 4));
  CHECK(key(0x1000 + 14 * 4) == key(0x1000 + 13 * 4));  // q[1][1] and q[1][2]
  CHECK(key(0x1000 + 14 * 4) != key(0x1000 + 9 * 4));
}

TEST_CASE("access regions: a key keeps the instruction, the space and the region") {
  const std::uint64_t k = region::key(0x1f30, 2, 77, 0b101);
  CHECK((k >> 63) == 1);  // never 0: 0 marks an empty slot
  CHECK(region::pc_of(k) == 0x1f30);
  CHECK(region::space_of(k) == 2);
  CHECK(region::region_of(k) == 77);
  CHECK((k & 0xffff) == 0b101);
  CHECK(region::pc_of(region::key(region::max_pc_offset, 0, 0, 0)) == region::max_pc_offset);
  // Shared and local accesses are keyed by space alone.
  AccessRegions r;
  r.range(0x1000, 0x100);
  r.build();
  CHECK(region::access_key(r.table(), 0x40, 1, 0x1010) ==
        region::access_key(r.table(), 0x40, 1, 8));
}

TEST_CASE("access regions: past 16 strided views over one region, the rest go unchecked, counted") {
  AccessRegions r;
  for (std::uint64_t i = 0; i < 18; ++i) {
    const std::vector<region::Dim> dims{{2, 8 + i}, {2, 1}};
    r.strided(0x1000, 64, 4, dims);  // 18 distinct views over [0x1000, 0x1040)
  }
  r.build();
  REQUIRE(r.regions() == 3);
  CHECK(r.checks()[1].count == region::max_checks);
  CHECK(r.overfull() == 1);
}
