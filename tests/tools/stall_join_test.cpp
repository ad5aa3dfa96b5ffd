#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <pasta/core/names.hpp>
#include <pasta/tools/detail/stall_join.hpp>

using namespace pasta::detail::stall;

namespace {

// One sampled instruction. (Not named stall(): in a unity batch after a test that opens
// pasta::detail, that name would clash with the namespace pasta::detail::stall.)
SampledPc at_pc(std::uint64_t pc, std::string reason, double samples,
                std::vector<std::uint64_t> waits_for = {}, std::vector<std::uint64_t> reads = {}) {
  return {pc, {{std::move(reason), samples}}, std::move(waits_for), std::move(reads)};
}

// The instrumented run: accesses per (kernel, pc), target and operator.
struct Accessed {
  std::map<std::pair<std::string, std::uint64_t>, Accesses> store;
  Accessed& at(std::string kernel, std::uint64_t pc, std::uint32_t target, std::uint64_t n,
               pasta::NameId op = {}) {
    store[{std::move(kernel), pc}][{target, op}] += n;
    return *this;
  }
  AccessesAt index() const {
    AccessesAt out;
    for (const auto& [site, accesses] : store) out[{site.first, site.second}] = &accesses;
    return out;
  }
};

Blame join_one(std::vector<SampledPc> pcs, const Accessed& run2) {
  return join({{"k", "", std::move(pcs)}}, run2.index(), {});
}

double blamed(const Blame& b, std::uint32_t target, std::string kernel = "k",
              pasta::NameId op = {}) {
  const auto it = b.blamed.find({{target, op}, kernel});
  return it == b.blamed.end() ? -1 : it->second;
}

}  // namespace

TEST_CASE("stall join: a memory-dependency stall is charged to what its load accessed") {
  const Blame b = join_one({at_pc(0x100, "long_scoreboard", 10, {0x80}, {0x80})},
                           Accessed().at("k", 0x80, 0, 4));
  CHECK(b.blamed.size() == 1);
  CHECK(blamed(b, 0) == 10);
  CHECK(b.unattributed.empty());
  CHECK(b.changed.empty());
}

TEST_CASE("stall join: a load that accessed two allocations splits its stall by access count") {
  const pasta::NameId mm = pasta::intern("aten::mm");
  const Blame b = join_one({at_pc(0x100, "long_scoreboard", 8, {0x80})},
                           Accessed().at("k", 0x80, 0, 3, mm).at("k", 0x80, 1, 1, mm));
  CHECK(blamed(b, 0, "k", mm) == 6);
  CHECK(blamed(b, 1, "k", mm) == 2);
}

TEST_CASE("stall join: a wait on loads sharing a scoreboard splits by samples per access") {
  // 0x80 reads target 0, whose single-load stalls cost 400 / 20 = 20 a
  // access; 0x90 reads target 1, 20 / 10 = 2 a access.
  const Accessed run2 = Accessed().at("k", 0x80, 0, 20).at("k", 0x90, 1, 10);
  const SampledPc first = at_pc(0x100, "long_scoreboard", 400, {0x80});
  const SampledPc second = at_pc(0x110, "long_scoreboard", 20, {0x90});
  SUBCASE("by the rates of single-load stalls") {
    const Blame b =
        join_one({first, second, at_pc(0x120, "long_scoreboard", 220, {0x80, 0x90})}, run2);
    CHECK(blamed(b, 0) == 400 + 200);
    CHECK(blamed(b, 1) == 20 + 20);
  }
  SUBCASE("with no single-load stall, to the loads whose registers it reads") {
    const Blame b = join_one({at_pc(0x120, "long_scoreboard", 220, {0x80, 0x90}, {0x90})}, run2);
    CHECK(blamed(b, 0) == -1);
    CHECK(blamed(b, 1) == 220);
  }
  SUBCASE("with neither, evenly") {
    const Blame b = join_one({at_pc(0x120, "long_scoreboard", 220, {0x80, 0x90})}, run2);
    CHECK(blamed(b, 0) == 110);
    CHECK(blamed(b, 1) == 110);
  }
}

TEST_CASE("stall join: samples at an instruction with no access record are counted unattributed") {
  const Blame b = join_one({at_pc(0x100, "long_scoreboard", 5, {0x80}),  // 0x80 made no access
                            at_pc(0x110, "long_scoreboard", 7),          // no load found
                            at_pc(0x120, "long_scoreboard", 3, {0x90})},
                           Accessed().at("k", 0x90, 2, 1));
  CHECK(blamed(b, 2) == 3);
  const std::map<std::string, double> expected{
      {"load made no recorded access (e.g. skipped by a filter)", 5},
      {"memory dependency with no load found in the SASS", 7}};
  CHECK(b.unattributed == expected);
}

TEST_CASE(
    "stall join: another reason is charged at its own instruction, to memory only if it "
    "accessed some") {
  const Blame b = join_one({at_pc(0x100, "math_pipe_throttle", 9, {0x80}),  // not its waits
                            at_pc(0x80, "lg_throttle", 4)},                 // at the load itself
                           Accessed().at("k", 0x80, 0, 2));
  CHECK(blamed(b, 0) == 4);
  const std::map<std::string, double> expected{
      {"not at a memory instruction (compute, sync, ...)", 9}};
  CHECK(b.unattributed == expected);
}

TEST_CASE("stall join: kernels are matched by name, and left out when their code changed") {
  const Accessed run2 = Accessed().at("k", 0x80, 0, 1).at("m", 0x80, 1, 1).at("n", 0x80, 2, 1);
  const std::vector<SampledKernel> sampled{
      {"k", "aa", {at_pc(0x100, "long_scoreboard", 10, {0x80})}},
      {"m", "bb", {at_pc(0x100, "long_scoreboard", 20, {0x80})}},  // code differs
      {"n", "", {at_pc(0x100, "long_scoreboard", 30, {0x80})}},    // code unknown: kept
      {"never_ran", "", {at_pc(0x100, "barrier", 40)}}};
  const std::map<std::string, std::string, std::less<>> code{{"k", "aa"}, {"m", "cc"}};
  const Blame b = join(sampled, run2.index(), code);
  CHECK(blamed(b, 0, "k") == 10);
  CHECK(blamed(b, 1, "m") == -1);
  CHECK(blamed(b, 2, "n") == 30);
  CHECK(b.changed == std::vector<std::string>{"m"});
  const std::map<std::string, double> expected{
      {"kernel code differs between the runs", 20},
      {"kernel made no recorded access in the instrumented run", 40}};
  CHECK(b.unattributed == expected);
}

TEST_CASE("stall join: long-scoreboard reasons are memory dependencies, not-issued ones subsets") {
  CHECK(memory_dependency("long_scoreboard"));
  CHECK(memory_dependency("long_scoreboard_not_issued"));
  CHECK_FALSE(memory_dependency("short_scoreboard"));
  CHECK(not_issued("long_scoreboard_not_issued"));
  CHECK_FALSE(not_issued("selected"));
}
