#include <doctest/doctest.h>

#include <pasta/core/address_map.hpp>

using namespace pasta;

TEST_CASE("an address maps to the live allocation that contains it") {
  AddressMap m;
  CHECK(m.insert({.base = 0x1000, .bytes = 0x100, .kind = MemKind::device}) == 0);
  CHECK(m.insert({.base = 0x2000, .bytes = 0x10, .kind = MemKind::managed}) == 0);
  CHECK(m.find(0xfff) == nullptr);
  REQUIRE(m.find(0x1000));
  CHECK(m.find(0x1000)->base == 0x1000);
  CHECK(m.find(0x10ff)->base == 0x1000);
  CHECK(m.find(0x1100) == nullptr);
  CHECK(m.find(0x200f)->kind == MemKind::managed);
  CHECK(m.find(0x2010) == nullptr);
}

TEST_CASE("freeing removes the range; unknown frees are reported") {
  AddressMap m;
  m.insert({.base = 0x1000, .bytes = 0x100});
  CHECK_FALSE(m.erase(0x1004));
  const auto freed = m.erase(0x1000);
  REQUIRE(freed);
  CHECK(freed->bytes == 0x100);
  CHECK(m.find(0x1000) == nullptr);
  CHECK(m.size() == 0);
}

TEST_CASE("an allocation over live ones replaces them (their free was missed)") {
  AddressMap m;
  m.insert({.base = 0x1000, .bytes = 0x100});
  m.insert({.base = 0x1100, .bytes = 0x100});
  m.insert({.base = 0x3000, .bytes = 0x100});
  CHECK(m.insert({.base = 0x10f0, .bytes = 0x20}) == 2);
  CHECK(m.size() == 2);
  CHECK(m.find(0x1000) == nullptr);
  CHECK(m.find(0x10f8)->base == 0x10f0);
  CHECK(m.find(0x3000)->base == 0x3000);
}

TEST_CASE("zero-byte allocations hold no address") {
  AddressMap m;
  m.insert({.base = 0x1000, .bytes = 0});
  CHECK(m.find(0x1000) == nullptr);
  CHECK(m.size() == 1);
}
