#include <doctest/doctest.h>

#include <pasta/tools/uvm_hotness.hpp>

#include "../support.hpp"

using namespace pasta;

namespace {
const Table& table(const Report& r, std::string_view name) {
  for (const Table& t : r.tables())
    if (t.name() == name) return t;
  FAIL("no table " << name);
  return r.tables().front();
}
std::string cell(const Table& t, std::size_t row, std::size_t col) {
  return std::get<std::string>(t.rows().at(row).at(col));
}
}  // namespace

TEST_CASE("UvmHotness: managed pages per kernel and scope, working set, and advice") {
  Config cfg;
  cfg.page_bytes = 4096;
  tools::UvmHotness u(cfg);
  const NameId init = intern("init"), sum = intern("sum"), step = intern("step");
  // A managed buffer of 8 pages, a device buffer that the tool ignores, and
  // a managed one nobody touches.
  u.on(MemAlloc{.address = 0x100000, .bytes = 8 * 4096, .mem_kind = MemKind::managed});
  u.on(MemAlloc{.address = 0x200000, .bytes = 4096, .mem_kind = MemKind::device});
  u.on(MemAlloc{.address = 0x300000, .bytes = 4096, .mem_kind = MemKind::managed});
  u.on(ScopeBegin{.name = step, .thread = 7});
  // Launch 1 (init) touches pages 2..5; launch 2 (sum) pages 2 and 3, twice each.
  u.on(KernelLaunch{.correlation = 1, .name = init, .thread = 7});
  for (std::uint64_t p = 2; p <= 5; ++p)
    u.on(AccessHistogram{.correlation = 1, .address = 0x100000 + p * 4096, .alloc_base = 0x100000,
                         .bin_bytes = 4096, .writes = 10, .write_bytes = 40});
  u.on(AccessHistogram{.correlation = 1, .address = 0x200000, .alloc_base = 0x200000,
                       .bin_bytes = 4096, .reads = 99});
  u.on(KernelComplete{.correlation = 1});
  u.on(ScopeEnd{.name = step, .thread = 7});
  u.on(KernelLaunch{.correlation = 2, .name = sum, .thread = 7});
  for (int twice = 0; twice < 2; ++twice)
    for (std::uint64_t p = 2; p <= 3; ++p)
      u.on(MemAccess{.correlation = 2, .address = 0x100000 + p * 4096 + 8,
                     .alloc_base = 0x100000, .bytes = 4, .flags = access::read});
  u.on(KernelComplete{.correlation = 2});

  REQUIRE(u.managed().size() == 2);
  const auto& m = u.managed()[0];
  CHECK(m.touched_pages == 4);
  CHECK(m.accesses == 44);
  CHECK(m.min_page == 2);
  CHECK(m.max_page == 5);

  Report r("uvm_hotness");
  u.report(r);
  CHECK(std::get<std::uint64_t>(r.summary().at(2).second) == 4 * 4096);  // touched
  CHECK(std::get<std::uint64_t>(r.summary().at(3).second) == 4 * 4096);  // working set

  const Table& kernels = table(r, "kernels");
  REQUIRE(kernels.rows().size() == 2);
  CHECK(cell(kernels, 0, 0) == "init");
  CHECK(std::get<std::uint64_t>(kernels.rows()[0][2]) == 4);
  CHECK(cell(kernels, 1, 0) == "sum");
  CHECK(std::get<std::uint64_t>(kernels.rows()[1][2]) == 2);

  const Table& scopes = table(r, "scopes");
  REQUIRE(scopes.rows().size() == 2);
  CHECK(cell(scopes, 1, 0) == "step");
  CHECK(std::get<std::uint64_t>(scopes.rows()[1][2]) == 4);

  const Table& advice = table(r, "advice");
  REQUIRE(advice.rows().size() == 3);
  CHECK(cell(advice, 0, 1) ==
        "cudaMemAdvise(0x100000, 32768, cudaMemAdviseSetPreferredLocation, "
        "{cudaMemLocationTypeDevice, 0})");
  CHECK(cell(advice, 1, 1) ==
        "cudaMemPrefetchAsync(0x100000 + 8192, 16384, {cudaMemLocationTypeDevice, 0}, 0, "
        "stream) before launch 1 (init)");
  CHECK(cell(advice, 1, 2).find("4 of its 8 pages") == std::string::npos);  // half: whole range
  CHECK(cell(advice, 2, 1) == "(none: no selected kernel touched it)");
}
