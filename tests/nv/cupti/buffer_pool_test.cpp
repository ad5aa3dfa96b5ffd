// The activity buffers pasta hands CUPTI (nv::detail::BufferPool): every
// buffer handed out is zero, as CUPTI is told, whether reused or new, and
// the pool keeps no more spares than it was given.
#include <doctest/doctest.h>

#include <pasta/nv/cupti/detail/buffer_pool.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

using pasta::nv::detail::BufferPool;

namespace {

bool all_zero(const std::uint8_t* b, std::size_t n) {
  return std::all_of(b, b + n, [](std::uint8_t c) { return c == 0; });
}

}  // namespace

TEST_CASE("BufferPool hands out zeroed buffers, reused after they come back") {
  constexpr std::size_t bytes = 64 << 10;
  BufferPool pool(bytes, 2);

  SUBCASE("without prepare, a request allocates") {
    std::uint8_t* b = pool.take();
    REQUIRE(b);
    CHECK(all_zero(b, bytes));
    CHECK(pool.fresh() == 1);
    CHECK(pool.reused() == 0);
    std::memset(b, 0xab, bytes);  // CUPTI's records, past the valid bytes too
    pool.give_back(b);
    std::uint8_t* again = pool.take();
    CHECK(again == b);
    CHECK(all_zero(again, bytes));
    CHECK(pool.reused() == 1);
    CHECK(pool.fresh() == 1);
    pool.give_back(again);
  }

  SUBCASE("prepare makes the spares; requests beyond them allocate") {
    pool.prepare();
    std::vector<std::uint8_t*> taken;
    for (int i = 0; i < 3; ++i) taken.push_back(pool.take());
    CHECK(pool.reused() == 2);
    CHECK(pool.fresh() == 1);
    for (std::uint8_t* b : taken) {
      REQUIRE(b);
      CHECK(all_zero(b, bytes));
      std::memset(b, 0x5a, 100);
    }
    // Three back, two kept: the next three requests reuse two, allocate one.
    for (std::uint8_t* b : taken) pool.give_back(b);
    std::vector<std::uint8_t*> again;
    for (int i = 0; i < 3; ++i) again.push_back(pool.take());
    CHECK(pool.reused() == 4);
    CHECK(pool.fresh() == 2);
    for (std::uint8_t* b : again) CHECK(all_zero(b, bytes));
    for (std::uint8_t* b : again) pool.give_back(b);
  }

  SUBCASE("prepare twice keeps the number of spares") {
    pool.prepare();
    pool.prepare();
    std::uint8_t* a = pool.take();
    std::uint8_t* b = pool.take();
    std::uint8_t* c = pool.take();
    CHECK(pool.reused() == 2);
    CHECK(pool.fresh() == 1);
    pool.give_back(a);
    pool.give_back(b);
    pool.give_back(c);
  }

  pool.give_back(nullptr);  // CUPTI's completion of no buffer
}
