#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <vector>

#include <pasta/core/detail/files.hpp>
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

TEST_CASE("MemHotness draws page hotness over launches as an SVG, one cell per launch and page") {
  test::TempDir dir;
  Config cfg = test::quiet(dir);
  cfg.page_bytes = 4096;
  tools::MemHotness h(cfg);
  h.on(MemAlloc{.address = 0x10000, .bytes = 4 * 4096, .mem_kind = MemKind::device});
  // Launch 1 touches pages 0 and 1; launch 2 page 3 (twice); launch 3 page 0.
  h.on(MemAccess{.correlation = 1, .address = 0x10000, .alloc_base = 0x10000, .bytes = 4});
  h.on(MemAccess{.correlation = 1, .address = 0x11000, .alloc_base = 0x10000, .bytes = 4});
  h.on(AccessHistogram{.correlation = 2, .address = 0x13000, .alloc_base = 0x10000,
                       .bin_bytes = 4096, .reads = 2, .read_bytes = 8});
  h.on(MemAccess{.correlation = 3, .address = 0x10010, .alloc_base = 0x10000, .bytes = 4});
  Report r("mem_hotness");
  h.report(r);
  const std::string svg = detail::read_file(dir.file("mem_hotness.svg"));
  auto count = [&](std::string_view what) {
    std::size_t n = 0;
    for (auto at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("class=\"panel\"") == 1);
  CHECK(count("class=\"cell\"") == 4);
  CHECK(count("launches 1-1, pages 3-3: 2 accesses") == 1);
  CHECK(count("launches 2-2, pages 0-0: 1 accesses") == 1);
  CHECK(svg.rfind("</svg>") != std::string::npos);
}

TEST_CASE("The heatmap merges neighbouring launches and pages beyond its grid") {
  detail::Heatmap m(1000);  // 1000 pages: 16 pages per row, 63 rows
  CHECK(m.rows() == 63);
  CHECK(m.pages_per_row() == 16);
  for (std::uint64_t launch = 0; launch < 600; ++launch) {
    m.add(launch % 1000, 1);
    m.close(launch);
  }
  CHECK(m.launches_per_column() == 4);  // 600 launches in at most 256 columns
  std::uint64_t total = 0;
  for (const auto& cell : m.cells()) total += cell.n;
  CHECK(total == 600);
  CHECK(m.count(0, 0) == 4);  // launches 0-3 touched pages 0-3: row 0
  CHECK(m.count(0, 1) == 0);
  // Launches 596-599 touched pages 596-599: row 37 of column 149.
  CHECK(m.count(149, 37) == 4);
  CHECK(m.cells().size() == 150);  // one cell a column: 4 launches, 4 pages, one row
  CHECK(std::is_sorted(m.cells().begin(), m.cells().end(), [](const auto& a, const auto& b) {
    return a.col != b.col ? a.col < b.col : a.row < b.row;
  }));

  // Closes out of launch order still land in their cells, in order.
  detail::Heatmap u(4);  // 4 pages, a row each
  u.add(0, 1);
  u.close(5);
  u.add(1, 2);
  u.close(2);
  u.add(0, 3);
  u.add(3, 1);
  u.close(5);
  std::vector<std::array<std::uint64_t, 3>> cells;
  for (const auto& c : u.cells()) cells.push_back({c.col, c.row, c.n});
  CHECK(cells == std::vector<std::array<std::uint64_t, 3>>{{2, 1, 2}, {5, 0, 4}, {5, 3, 1}});
}
