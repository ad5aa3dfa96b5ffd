// What RangeCounters' summary says of the calls that replayed kept launches
// early (nv::detail::EarlyReplays), on calls written out by hand.
#include <doctest/doctest.h>

#include <pasta/nv/counters/counter_stats.hpp>

#include <string>

using pasta::nv::detail::EarlyReplays;

TEST_CASE("EarlyReplays: each call's replays and launches, the most replays first") {
  EarlyReplays e;
  CHECK(e.summary().empty());
  e.add("cudaFree", 2);
  e.add("cudaStreamSynchronize", 1);
  e.add("cudaStreamSynchronize", 1);
  e.add("cudaStreamSynchronize", 5);
  e.add("", 3);
  CHECK(e.summary() ==
        "cudaStreamSynchronize 3 (7 launches), cudaFree 1 (2 launches), "
        "a call not named 1 (3 launches)");
}

TEST_CASE("EarlyReplays: names past the first eight count as other calls") {
  EarlyReplays e;
  for (int i = 0; i < 10; ++i) e.add("call" + std::to_string(i), 1);
  e.add("call0", 1);
  e.add("call9", 4);
  CHECK(e.summary() ==
        "other calls 3 (6 launches), call0 2 (2 launches), call1 1 (1 launch), "
        "call2 1 (1 launch), call3 1 (1 launch), call4 1 (1 launch), call5 1 (1 launch), "
        "call6 1 (1 launch), call7 1 (1 launch)");
}
