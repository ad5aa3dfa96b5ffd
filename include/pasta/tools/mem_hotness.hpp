// Which memory the kernels touch: per allocation and per page, accesses,
// bytes and the read/write split, from raw access records or from
// histograms reduced on the device. Answers "which objects are hot".
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/core.h>

#include <pasta/core/config.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/report.hpp>

namespace pasta::tools {

class MemHotness {
 public:
  static constexpr std::string_view name = "mem_hotness";

  struct Counts {
    std::uint64_t reads = 0, writes = 0, read_bytes = 0, write_bytes = 0;
    std::uint64_t accesses() const { return reads + writes; }
    std::uint64_t bytes() const { return read_bytes + write_bytes; }
    void add(const Counts& c) {
      reads += c.reads;
      writes += c.writes;
      read_bytes += c.read_bytes;
      write_bytes += c.write_bytes;
    }
  };
  struct Object {
    std::uint64_t base = 0, bytes = 0;
    std::uint32_t device = 0;
    MemKind kind = MemKind::unknown;
    bool freed = false;
    Counts total;
    std::unordered_map<std::uint64_t, Counts> pages;  // page index -> counts
  };

  MemHotness() = default;
  explicit MemHotness(const Config& cfg) : page_bytes_(cfg.page_bytes) {}

  void on(const MemAlloc& e) {
    live_[e.address] = objects_.size();
    objects_.push_back(
        {.base = e.address, .bytes = e.bytes, .device = e.device, .kind = e.mem_kind});
  }

  void on(const MemFree& e) {
    if (auto it = live_.find(e.address); it != live_.end()) {
      objects_[it->second].freed = true;
      live_.erase(it);
    }
  }

  // An access counts as a read and/or a write by its flags; an atomic is both.
  void on(const MemAccess& e) {
    Counts c;
    const bool write = e.flags & (access::write | access::atomic);
    const bool read = (e.flags & (access::read | access::atomic)) || !write;
    c.reads = read;
    c.writes = write;
    c.read_bytes = read ? e.bytes : 0;
    c.write_bytes = write ? e.bytes : 0;
    add(e.alloc_base, e.address, c);
  }

  void on(const AccessHistogram& e) {
    add(e.alloc_base, e.address,
        {.reads = e.reads,
         .writes = e.writes,
         .read_bytes = e.read_bytes,
         .write_bytes = e.write_bytes});
  }

  // Accesses that hit no known allocation.
  const Counts& unattributed() const { return unattributed_; }
  const std::vector<Object>& objects() const { return objects_; }
  std::uint64_t page_bytes() const { return page_bytes_; }

  void report(Report& out) const {
    Counts all = unattributed_;
    std::vector<const Object*> hot;
    for (const Object& o : objects_) {
      all.add(o.total);
      if (o.total.accesses()) hot.push_back(&o);
    }
    std::sort(hot.begin(), hot.end(), [](const Object* a, const Object* b) {
      if (a->total.accesses() != b->total.accesses())
        return a->total.accesses() > b->total.accesses();
      return a->base < b->base;
    });
    out.summary("allocations seen", objects_.size());
    out.summary("allocations accessed", hot.size());
    out.summary("accesses", all.accesses());
    out.summary("bytes accessed", all.bytes());
    out.summary("accesses outside known allocations", unattributed_.accesses());
    out.summary("page size (bytes)", page_bytes_);

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
    for (const Object* o : hot) {
      std::uint64_t hottest = 0, hottest_n = 0;
      for (const auto& [page, c] : o->pages) {
        page_rows.push_back({o, page, c});
        if (c.accesses() > hottest_n || (c.accesses() == hottest_n && page < hottest))
          hottest = page, hottest_n = c.accesses();
      }
      objects.row(++rank, hex(o->base), to_string(o->kind), o->device, o->bytes,
                  o->total.accesses(), o->total.reads, o->total.writes, o->total.bytes(),
                  o->pages.size(), (o->bytes + page_bytes_ - 1) / page_bytes_, hottest, hottest_n,
                  o->freed);
    }
    std::sort(page_rows.begin(), page_rows.end(), [](const PageRow& a, const PageRow& b) {
      if (a.c.accesses() != b.c.accesses()) return a.c.accesses() > b.c.accesses();
      return a.o->base != b.o->base ? a.o->base < b.o->base : a.page < b.page;
    });
    for (const auto& r : page_rows)
      pages.row(hex(r.o->base), r.page, hex(r.o->base + r.page * page_bytes_), r.c.accesses(),
                r.c.reads, r.c.writes, r.c.bytes());
  }

 private:
  static std::string hex(std::uint64_t v) { return fmt::format("0x{:x}", v); }

  void add(std::uint64_t alloc_base, std::uint64_t address, const Counts& c) {
    auto it = alloc_base ? live_.find(alloc_base) : live_.end();
    if (it == live_.end()) {
      unattributed_.add(c);
      return;
    }
    Object& o = objects_[it->second];
    o.total.add(c);
    o.pages[(address - o.base) / page_bytes_].add(c);
  }

  std::uint64_t page_bytes_ = 64 * 1024;
  std::vector<Object> objects_;                          // every allocation, in order
  std::unordered_map<std::uint64_t, std::size_t> live_;  // base -> index into objects_
  Counts unattributed_;
};

}  // namespace pasta::tools
