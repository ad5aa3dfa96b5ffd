// Which metric set measures each launch (nv::detail::CounterPlan), on launch
// sequences written out by hand: the choices RangeCounters makes on the GPU.
#include <doctest/doctest.h>

#include <pasta/nv/counters/counter_plan.hpp>

#include <string>
#include <vector>

using pasta::nv::detail::CounterPlan;

namespace {

// Runs `launches` (one letter a signature) through a plan whose profiler
// follows its choices, as RangeCounters' does: F full, 1/2 one-pass set,
// . not measured.
std::string plan(const std::string& launches, std::uint64_t per_signature = 1,
                 std::size_t one_pass_sets = 1, CounterPlan* out = nullptr) {
  CounterPlan local;
  CounterPlan& p = out ? *out : local;
  p.configure(per_signature, one_pass_sets);
  int current = CounterPlan::none;
  std::string got;
  for (char c : launches) {
    const int set = p.pick(static_cast<std::uint64_t>(c), current);
    if (set != CounterPlan::none) current = set;
    got += set == CounterPlan::none ? '.' : set == CounterPlan::full ? 'F' : char('0' + set);
  }
  return got;
}

}  // namespace

TEST_CASE("a signature's first launch is measured in full, a later one in one pass, the rest not") {
  CounterPlan p;
  // The second launch finds the profiler set up for the full set: it waits, the third switches.
  CHECK(plan("aaaa", 1, 1, &p) == "F.1.");
  CHECK(p.waits() == 1);
  CHECK(plan("aa", 1, 1) == "F.");  // launched twice: the one-pass measurement is lost
}

TEST_CASE("with two one-pass sets a signature is measured three times") {
  CHECK(plan("aaaaa", 1, 2) == "F.12.");
}

TEST_CASE("PASTA_COUNTER_LAUNCHES above one: that many launches in full first") {
  CHECK(plan("aaaaaa", 3, 1) == "FFF.1.");
  CHECK(plan("aaaa", 0, 1) == "FFFF");  // 0: every launch in full, no one-pass set needed
}

TEST_CASE(
    "no one-pass set (the full set takes one pass, or none fits): launches after the "
    "first are not measured") {
  CHECK(plan("aaa", 1, 0) == "F..");
}

TEST_CASE("a repeat amid new signatures waits for its next launch, a run of repeats switches") {
  CounterPlan p;
  // A model's first block (a, b, c new; a repeated inside it), then its second block.
  CHECK(plan("abacdabcd", 1, 1, &p) == "FF.FF1111");
  CHECK(p.waits() == 1);
}

TEST_CASE("a signature waits once: its next launch amid new ones switches") {
  // b repeats between new signatures every time: it waits once, then is measured.
  CHECK(plan("abcbdbe", 1, 1) == "FFF.F1F");
}

TEST_CASE("the launch after one that waited switches, whatever it follows") {
  // a and b both due for a one-pass set after new c: a waits, b is measured, then a is
  // measured at its next launch with the profiler already on the one-pass set.
  CHECK(plan("abcaba", 1, 1) == "FFF.11");
}

TEST_CASE("a signature whose only later launch waited keeps its full measurement only") {
  CounterPlan p;
  CHECK(plan("abac", 1, 1, &p) == "FF.F");
  CHECK(p.waits() == 1);
}

TEST_CASE("a lost measurement (its range did not match) is made again at the next launch") {
  CounterPlan p;
  p.configure(1, 1);
  CHECK(p.pick('a', CounterPlan::none) == CounterPlan::full);
  p.lost('a', CounterPlan::full);
  CHECK(p.pick('a', CounterPlan::full) == CounterPlan::full);
  CHECK(p.pick('a', CounterPlan::full) == CounterPlan::none);  // due for one pass: waits
  CHECK(p.pick('a', CounterPlan::full) == 1);
  p.lost('a', 1);
  CHECK(p.pick('a', 1) == 1);
  CHECK(p.pick('a', 1) == CounterPlan::none);
  p.lost('z', CounterPlan::full);  // a signature never seen: nothing to undo
  CHECK(p.pick('z', CounterPlan::full) == CounterPlan::full);
}
