#include <doctest/doctest.h>

#include <utility>
#include <vector>

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

TEST_CASE("freeing removes the range, unknown frees are reported") {
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

TEST_CASE("BasicAddressMap holds a caller's own range type and hands back what it drops") {
  struct Tensor {
    std::uint64_t base = 0, bytes = 0;
    int number = 0;
  };
  BasicAddressMap<Tensor> m;
  m.insert({.base = 0x1000, .bytes = 0x100, .number = 1});
  m.insert({.base = 0x1100, .bytes = 0x100, .number = 2});
  CHECK(m.find(0x1180)->number == 2);
  int dropped = 0;
  CHECK(m.insert({.base = 0x1080, .bytes = 0x10, .number = 3},
                 [&](const Tensor& t) { dropped += t.number; }) == 1);
  CHECK(dropped == 1);
  CHECK(m.find(0x1088)->number == 3);
  CHECK(m.erase(0x1100)->number == 2);
}

TEST_CASE("FlatMap keeps its entries sorted: bounds, find, emplace, erase") {
  detail::FlatMap<std::uint64_t, int> m;
  CHECK(m.emplace(30, 3).second);
  CHECK(m.emplace(10, 1).second);
  CHECK(m.emplace(20, 2).second);
  CHECK_FALSE(m.emplace(20, 9).second);  // there already: kept
  m[40] = 4;
  ++m[10];
  std::vector<std::pair<std::uint64_t, int>> all(m.begin(), m.end());
  CHECK(all == std::vector<std::pair<std::uint64_t, int>>{{10, 2}, {20, 2}, {30, 3}, {40, 4}});
  CHECK(m.lower_bound(20)->first == 20);
  CHECK(m.upper_bound(20)->first == 30);
  CHECK(m.upper_bound(40) == m.end());
  CHECK(m.find(25) == m.end());
  CHECK(m.erase(m.find(20))->first == 30);
  CHECK(m.size() == 3);
  const auto& c = m;
  CHECK(c.find(30)->second == 3);
  CHECK(c.lower_bound(0) == c.begin());
}
