#include <doctest/doctest.h>

#include <pasta/tools/mem_hotness.hpp>

#include "../support.hpp"

using namespace pasta;

namespace {
Config pages_of(std::uint64_t bytes) {
  Config c;
  c.page_bytes = bytes;
  return c;
}
}  // namespace

TEST_CASE("MemHotness counts accesses per allocation and page, reads and writes apart") {
  tools::MemHotness h(pages_of(4096));
  h.on(MemAlloc{.address = 0x10000, .bytes = 3 * 4096, .mem_kind = MemKind::device});
  h.on(MemAlloc{.address = 0x20000, .bytes = 4096, .mem_kind = MemKind::managed});
  for (int i = 0; i < 5; ++i)
    h.on(MemAccess{
        .address = 0x10000 + 8u * i, .alloc_base = 0x10000, .bytes = 8, .flags = access::read});
  h.on(MemAccess{.address = 0x12000, .alloc_base = 0x10000, .bytes = 4, .flags = access::write});
  h.on(MemAccess{.address = 0x12004, .alloc_base = 0x10000, .bytes = 4, .flags = access::atomic});
  h.on(MemAccess{.address = 0x99999, .alloc_base = 0, .bytes = 4, .flags = access::read});
  h.on(AccessHistogram{.address = 0x20000,
                       .alloc_base = 0x20000,
                       .bin_bytes = 4096,
                       .reads = 10,
                       .writes = 2,
                       .read_bytes = 40,
                       .write_bytes = 8});

  const auto& a = h.objects()[0];
  CHECK(a.total().reads == 6);   // 5 reads + the atomic
  CHECK(a.total().writes == 2);  // the write + the atomic
  CHECK(a.total().read_bytes == 44);
  CHECK(a.total().write_bytes == 8);
  CHECK(a.total().accesses() == 8);
  CHECK(a.pages.touched() == 2);
  CHECK(a.pages.get(0).reads == 5);
  CHECK(a.pages.get(1).accesses() == 0);
  CHECK(a.pages.get(2).writes == 2);
  CHECK(h.objects()[1].total().accesses() == 12);
  CHECK(h.unattributed().reads == 1);

  Report r("mem_hotness");
  h.report(r);
  const Table& objects = r.tables()[0];
  REQUIRE(objects.rows().size() == 2);
  // The managed buffer is hotter (12 accesses) than the device one (8).
  CHECK(std::get<std::string>(objects.rows()[0][1]) == "0x20000");
  CHECK(std::get<std::string>(objects.rows()[0][2]) == "managed");
  CHECK(std::get<std::uint64_t>(objects.rows()[1][5]) == 8);   // accesses
  CHECK(std::get<std::uint64_t>(objects.rows()[1][9]) == 2);   // pages touched
  CHECK(std::get<std::uint64_t>(objects.rows()[1][10]) == 3);  // pages
  CHECK(std::get<std::uint64_t>(objects.rows()[1][11]) == 0);  // hottest page
  CHECK(std::get<std::uint64_t>(objects.rows()[1][12]) == 5);
  const Table& pages = r.tables()[1];
  REQUIRE(pages.rows().size() == 3);
  CHECK(std::get<std::string>(pages.rows()[0][2]) == "0x20000");
  CHECK(std::get<std::string>(pages.rows()[2][2]) == "0x12000");
}

TEST_CASE("allocations beyond the dense limit count their pages sparsely") {
  tools::MemHotness h(pages_of(4096));
  const std::uint64_t huge = (PageCounts::dense_limit + 1) * 4096;
  h.on(MemAlloc{.address = 1ull << 40, .bytes = huge});
  h.on(MemAccess{.address = (1ull << 40) + huge - 1, .alloc_base = 1ull << 40, .bytes = 1});
  h.on(MemAccess{.address = (1ull << 40) + huge - 2, .alloc_base = 1ull << 40, .bytes = 1});
  const auto& o = h.objects()[0];
  CHECK(o.pages.touched() == 1);
  CHECK(o.pages.get(PageCounts::dense_limit).reads == 2);
}

TEST_CASE("an address reused after a free starts a new object") {
  tools::MemHotness h(pages_of(4096));
  h.on(MemAlloc{.address = 0x1000, .bytes = 64});
  h.on(MemAccess{.address = 0x1000, .alloc_base = 0x1000, .bytes = 4, .flags = access::read});
  h.on(MemFree{.address = 0x1000});
  h.on(MemAlloc{.address = 0x1000, .bytes = 128});
  h.on(MemAccess{.address = 0x1000, .alloc_base = 0x1000, .bytes = 4, .flags = access::write});
  h.on(MemAccess{.address = 0x1004, .alloc_base = 0x1000, .bytes = 4, .flags = access::write});
  REQUIRE(h.objects().size() == 2);
  CHECK(h.objects()[0].freed);
  CHECK(h.objects()[0].total().reads == 1);
  CHECK(h.objects()[1].bytes == 128);
  CHECK(h.objects()[1].total().writes == 2);
  CHECK_FALSE(h.objects()[1].freed);
}
