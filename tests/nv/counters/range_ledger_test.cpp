// Which range of a counter-data image is which launch (nv::detail::RangeLedger),
// on launch sequences written out by hand: the bookkeeping RangeCounters does
// around each decode on the GPU.
#include <doctest/doctest.h>

#include <pasta/nv/counters/range_ledger.hpp>

#include <cstddef>
#include <vector>

using pasta::nv::detail::RangeLedger;

TEST_CASE(
    "an image's ranges are its launches in order, flushes and launches passed over included") {
  RangeLedger l;
  l.fresh_image();
  l.add_own();
  l.add_measured(11, 1);
  l.pass_over_launch(12, 2);
  l.add_measured(13, 1);
  const auto m = l.match(4);
  CHECK(m.first == 0);
  CHECK(m.ranges == 4);
  CHECK(m.matched);
  CHECK(m.extra == 0);
  REQUIRE(l.pending().size() == 4);
  CHECK(l.pending()[1].correlation == 11);
  CHECK(l.pending()[1].measured);
  CHECK_FALSE(l.pending()[2].measured);
  l.decoded(4);
  CHECK(l.pending().empty());
  // The next decode of the same image starts after the ranges decoded.
  l.add_measured(14, 3);
  const auto next = l.match(5);
  CHECK(next.first == 4);
  CHECK(next.ranges == 1);
  CHECK(next.matched);
}

TEST_CASE("ranges and launches not as many: none is matched, the extra ranges counted") {
  RangeLedger l;
  l.add_measured(1, 1);
  l.add_measured(2, 2);
  const auto more = l.match(3);
  CHECK_FALSE(more.matched);
  CHECK(more.ranges == 3);
  CHECK(more.extra == 1);
  const auto fewer = l.match(1);
  CHECK_FALSE(fewer.matched);
  CHECK(fewer.extra == 0);
}

TEST_CASE("a count below the ranges decoded is a fresh image's, counted from its first") {
  RangeLedger l;
  l.add_measured(1, 1);
  l.add_measured(2, 1);
  l.add_measured(3, 1);
  l.decoded(3);
  l.add_measured(4, 1);
  const auto m = l.match(1);
  CHECK(m.first == 0);
  CHECK(m.ranges == 1);
  CHECK(m.matched);
}

TEST_CASE(
    "at most pass_over launches in a row are passed over, a launch measured starts a new run") {
  RangeLedger l;
  std::size_t passed = 0;
  while (l.can_pass_over()) {
    l.pass_over_launch(passed, 7);
    ++passed;
  }
  CHECK(passed == RangeLedger::pass_over);
  l.end_run();
  CHECK(l.can_pass_over());
}

TEST_CASE("an image takes room ranges, the rest kept for ranges no launch explains") {
  static_assert(RangeLedger::room == 72);
  RangeLedger l;
  for (std::size_t i = 0; i + 1 < RangeLedger::room; ++i) l.add_measured(i, i);
  CHECK_FALSE(l.nearly_full());
  CHECK_FALSE(l.image_full());
  l.add_measured(99, 99);
  CHECK(l.nearly_full());
  CHECK_FALSE(l.can_pass_over());  // not into the image's last ranges
  CHECK_FALSE(l.image_full());     // decoded ranges only
  l.decoded(RangeLedger::room);
  CHECK(l.image_full());
  CHECK(l.nearly_full());
  l.fresh_image();
  CHECK_FALSE(l.image_full());
}

TEST_CASE("a batch's ranges fit in the image's room with those pending and decoded") {
  RangeLedger l;
  CHECK(l.fits(RangeLedger::room));  // a batch of 24 launches, a flush range before each
  CHECK_FALSE(l.fits(RangeLedger::room + 1));
  l.add_own();
  l.add_measured(1, 1);
  CHECK(l.fits(RangeLedger::room - 2));
  CHECK_FALSE(l.fits(RangeLedger::room - 1));
  l.decoded(10);  // ten ranges decoded, none pending
  CHECK(l.fits(RangeLedger::room - 10));
  CHECK_FALSE(l.fits(RangeLedger::room - 9));
  l.fresh_image();
  CHECK(l.fits(RangeLedger::room));
}
