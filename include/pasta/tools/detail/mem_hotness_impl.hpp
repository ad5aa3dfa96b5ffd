// MemHotness's event handlers and report (its tables and the heatmap): inline in header-only
// builds; in a compiled build (core/detail/api.hpp) compiled once, in the
// runtime, so a unit that includes the header parses none of it.
#pragma once

#include <algorithm>
#include <pasta/core/detail/files.hpp>
#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/log.hpp>
#include <pasta/tools/detail/heatmap_svg.hpp>

#include <pasta/tools/mem_hotness.hpp>

namespace pasta::tools {

PASTA_FUNC void MemHotness::on(const MemAlloc& e) {
  live_[e.address] = objects_.size();
  const std::uint64_t pages = (e.bytes + page_bytes_ - 1) >> page_shift_;
  objects_.push_back({.base = e.address,
                      .bytes = e.bytes,
                      .page_count = pages,
                      .device = e.device,
                      .kind = e.mem_kind,
                      .pages = Pages(pages),
                      .heat = detail::Heatmap(pages)});
  last_base_ = 0;
}

PASTA_FUNC void MemHotness::report(Report& out) const {
  out.page(60)
      .nothing("no memory accesses recorded: run with --memory", "accesses")
      .picture("Page hotness over kernel launches");
  const std::vector<Hot> hot = hottest();
  Counts all = unattributed_;
  for (const Object& o : objects_) all.add(o.total());
  out.summary("allocations seen", objects_.size());
  out.summary("allocations accessed", hot.size());
  out.summary("accesses", all.accesses());
  out.summary("bytes accessed", all.bytes());
  out.summary("accesses outside known allocations", unattributed_.accesses());
  out.summary("bytes outside known allocations", unattributed_.bytes());
  out.summary("page size (bytes)", page_bytes_);
  tables(out, hot);
  if (!output_dir_.empty() && !hot.empty()) write_heatmap(out, hot);
}

PASTA_FUNC auto MemHotness::hottest() const -> std::vector<Hot> {
  std::vector<Hot> hot;
  for (const Object& o : objects_)
    if (const Counts total = o.total(); total.accesses()) hot.push_back({&o, total});
  std::sort(hot.begin(), hot.end(), [](const Hot& a, const Hot& b) {
    if (a.total.accesses() != b.total.accesses()) return a.total.accesses() > b.total.accesses();
    return a.o->base < b.o->base;
  });
  return hot;
}

PASTA_FUNC void MemHotness::tables(Report& out, const std::vector<Hot>& hot) const {
  auto& objects = out.table(
      "objects", "Hottest allocations",
      {"rank", "address", "kind", "device", "size_bytes", "accesses", "reads", "writes", "bytes",
       "pages_touched", "pages", "hottest_page", "hottest_page_accesses", "freed"});
  auto& pages =
      out.table("pages", "Hottest pages",
                {"address", "page", "page_address", "accesses", "reads", "writes", "bytes"});
  struct PageRow {
    const Object* o;
    std::uint64_t page;
    Counts c;
  };
  std::vector<PageRow> page_rows;
  std::uint64_t rank = 0;
  for (const Hot& h : hot) {
    const Object* o = h.o;  // a named variable: lambdas below capture it
    std::uint64_t hottest = 0, hottest_n = 0;
    o->pages.for_each([&](std::uint64_t page, const Counts& c) {
      page_rows.push_back({o, page, c});
      if (c.accesses() > hottest_n || (c.accesses() == hottest_n && page < hottest))
        hottest = page, hottest_n = c.accesses();
    });
    objects.row(++rank, hex(o->base), to_string(o->kind), o->device, o->bytes, h.total.accesses(),
                h.total.reads, h.total.writes, h.total.bytes(), o->pages.touched(), o->page_count,
                hottest, hottest_n, o->freed);
  }
  std::sort(page_rows.begin(), page_rows.end(), [](const PageRow& a, const PageRow& b) {
    if (a.c.accesses() != b.c.accesses()) return a.c.accesses() > b.c.accesses();
    return a.o->base != b.o->base ? a.o->base < b.o->base : a.page < b.page;
  });
  for (const auto& r : page_rows)
    pages.row(hex(r.o->base), r.page, hex(r.o->base + r.page * page_bytes_), r.c.accesses(),
              r.c.reads, r.c.writes, r.c.bytes());
}

PASTA_FUNC void MemHotness::write_heatmap(Report& out, const std::vector<Hot>& hot) const {
  std::vector<detail::HeatmapPanel> panels;
  for (const Hot& h : hot) {
    if (panels.size() == heatmap_panels) break;
    if (h.o->heat_launch != ~0ull) h.o->heat.close(h.o->heat_launch);
    h.o->heat_launch = ~0ull;
    if (!h.o->heat.empty())
      panels.push_back({fmt::format("{} ({}, {} bytes, {} accesses)", hex(h.o->base),
                                    to_string(h.o->kind), h.o->bytes, h.total.accesses()),
                        &h.o->heat});
  }
  if (panels.empty()) return;
  const std::string path = pasta::detail::join_path(output_dir_, "mem_hotness.svg");
  const auto columns = (launches_ + panels.front().map->launches_per_column() - 1) /
                       panels.front().map->launches_per_column();
  std::string why = pasta::detail::make_dirs(output_dir_);
  if (why.empty()) why = pasta::detail::write_file(path, detail::heatmap_svg(panels, columns));
  if (why.empty())
    out.summary("heatmap", path);
  else
    pasta::detail::log_once("mem_hotness:svg", "mem_hotness.svg not written: " + why);
}

PASTA_FUNC void MemHotness::on(const MemFree& e) {
  if (auto it = live_.find(e.address); it != live_.end()) {
    objects_[it->second].freed = true;
    live_.erase(it);
    last_base_ = 0;
  }
}

PASTA_FUNC void MemHotness::on(const MemAccess& e) {
  const bool write = e.flags & (access::write | access::atomic);
  const bool read = (e.flags & (access::read | access::atomic)) || !write;
  if (e.correlation != launch_correlation_) [[unlikely]]
    next_launch(e.correlation);
  if (Object* o = object(e.alloc_base)) {
    const std::uint64_t page = (e.address - o->base) >> page_shift_;
    o->pages.at(page).add(read, write, e.bytes);
    heat(*o, page, 1);
  } else {
    unattributed_.add(read, write, e.bytes);
  }
}

PASTA_FUNC void MemHotness::on(const AccessHistogram& e) {
  const Counts c{.reads = e.reads,
                 .writes = e.writes,
                 .read_bytes = e.read_bytes,
                 .write_bytes = e.write_bytes};
  if (e.correlation != launch_correlation_) next_launch(e.correlation);
  if (Object* o = object(e.alloc_base)) {
    const std::uint64_t page = (e.address - o->base) >> page_shift_;
    o->pages.at(page).add(c);
    heat(*o, page, c.accesses());
  } else {
    unattributed_.add(c);
  }
}

PASTA_FUNC auto MemHotness::object(std::uint64_t alloc_base) -> Object* {
  if (alloc_base == last_base_ && alloc_base != 0) [[likely]]
    return &objects_[last_index_];
  return find_object(alloc_base);
}

PASTA_FUNC void MemHotness::next_launch(std::uint64_t correlation) {
  launch_correlation_ = correlation;
  ordinal_ = launches_++;
}

PASTA_FUNC void MemHotness::heat(const Object& o, std::uint64_t page, std::uint64_t n) {
  if (o.heat_launch != ordinal_) {
    if (o.heat_launch != ~0ull) o.heat.close(o.heat_launch);
    o.heat_launch = ordinal_;
  }
  o.heat.add(page, n);
}

}  // namespace pasta::tools
