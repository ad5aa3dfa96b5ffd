// The host half of the device annotations, free of any GPU runtime so that
// CPU tests drive it: the bins a launch counted become AccessHistogram
// events per allocation page, and the allocations they fall in, learnt from
// the runtime on first sight, become MemAlloc (and MemFree when the runtime
// reports a different allocation at a known address).
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include <pasta/core/events.hpp>
#include <pasta/device/layout.hpp>

namespace pasta::device::detail {

struct Range {
  std::uint64_t base = 0, bytes = 0;
  MemKind kind = MemKind::device;
  friend bool operator==(const Range&, const Range&) = default;
};

// What one collect needs to know besides the bins.
struct Collect {
  std::uint64_t correlation = 0;
  std::uint32_t device = 0;
  unsigned bin_shift = default_bin_shift;
  std::uint64_t page_bytes = 64 * 1024;  // a power of two, >= 1 << bin_shift
  std::uint64_t epoch = 0;               // a new value per collect
  std::uint64_t time_ns = 0;             // stamps the MemAlloc/MemFree it emits
};

// The known allocations as the device looks them up, with the page slots
// they take in all and the Allocations::version() they were built from.
struct KnownRanges {
  std::vector<KnownRange> ranges;
  std::uint64_t pages = 0;
  std::uint64_t version = 0;
};

// The allocations annotated launches touched. A cached allocation is checked
// against the runtime once per collect: memory freed and allocated again at
// the same address in between shows up as MemFree + MemAlloc.
class Allocations {
 public:
  // The allocation holding `address`, or nullptr. query(address) ->
  // std::optional<Range> asks the runtime; emit(event) takes MemAlloc/MemFree.
  template <class Query, class Emit>
  const Range* find(std::uint64_t address, const Collect& c, Query&& query, Emit&& emit) {
    auto it = by_base_.upper_bound(address);
    if (it != by_base_.begin()) {
      --it;
      Entry& e = it->second;
      if (address < e.range.base + e.range.bytes) {
        if (e.checked == c.epoch) return &e.range;
        const std::optional<Range> now = query(address);
        if (now && *now == e.range) {
          e.checked = c.epoch;
          return &e.range;
        }
        free(it, c, emit);
        return now ? add(*now, c, emit) : nullptr;
      }
    }
    const std::optional<Range> now = query(address);
    return now && now->bytes && address - now->base < now->bytes ? add(*now, c, emit) : nullptr;
  }

  std::size_t size() const { return by_base_.size(); }
  // Changes whenever an allocation is learnt or dropped.
  std::uint64_t version() const { return version_; }
  // The cached allocations, by base, as the device looks them up: each gets
  // ceil(bytes / page_bytes) page slots, numbered on from the one before.
  KnownRanges known(std::uint64_t page_bytes) const {
    KnownRanges out;
    out.version = version_;
    out.ranges.reserve(by_base_.size());
    for (const auto& [base, e] : by_base_) {
      out.ranges.push_back({.base = base, .end = base + e.range.bytes, .first_page = out.pages});
      out.pages += (e.range.bytes + page_bytes - 1) / page_bytes;
    }
    return out;
  }

 private:
  struct Entry {
    Range range;
    std::uint64_t checked = 0;  // the epoch it was last confirmed in
  };
  using Map = std::map<std::uint64_t, Entry>;

  template <class Emit>
  void free(Map::iterator it, const Collect& c, Emit& emit) {
    const Range& r = it->second.range;
    emit(MemFree{.address = r.base,
                 .bytes = r.bytes,
                 .device = c.device,
                 .mem_kind = r.kind,
                 .time_ns = c.time_ns});
    by_base_.erase(it);
    ++version_;
  }

  template <class Emit>
  const Range* add(const Range& r, const Collect& c, Emit& emit) {
    // Cached allocations it overlaps are gone.
    auto it = by_base_.lower_bound(r.base);
    if (it != by_base_.begin()) {
      auto before = std::prev(it);
      if (before->second.range.base + before->second.range.bytes > r.base) it = before;
    }
    while (it != by_base_.end() && it->second.range.base < r.base + r.bytes) free(it++, c, emit);
    emit(MemAlloc{.address = r.base,
                  .bytes = r.bytes,
                  .device = c.device,
                  .mem_kind = r.kind,
                  .time_ns = c.time_ns});
    ++version_;
    return &by_base_.emplace(r.base, Entry{r, c.epoch}).first->second.range;
  }

  Map by_base_;
  std::uint64_t version_ = 0;
};

// Turns one launch's non-empty bins (any order; sorted here) into
// AccessHistogram events: one per page of page_bytes of each allocation
// touched, with alloc_base set, and one per bin outside every allocation.
template <class Query, class Emit>
void emit_bins(std::span<Bin> bins, const Collect& c, Allocations& allocations, Query&& query,
               Emit&& emit) {
  std::sort(bins.begin(), bins.end(), [](const Bin& a, const Bin& b) { return a.key < b.key; });
  AccessHistogram page{};
  bool open = false;
  auto close = [&] {
    if (open) emit(page);
    open = false;
  };
  auto add = [](AccessHistogram& h, const Bin& b) {
    h.reads += b.reads;
    h.writes += b.writes;
    h.read_bytes += b.read_bytes;
    h.write_bytes += b.write_bytes;
  };
  for (const Bin& b : bins) {
    if (!b.key) continue;
    const std::uint64_t address = (b.key - 1) << c.bin_shift;
    const Range* r = allocations.find(address, c, query, emit);
    if (!r) {
      close();
      AccessHistogram h{.correlation = c.correlation,
                        .address = address,
                        .device = c.device,
                        .bin_bytes = 1u << c.bin_shift};
      add(h, b);
      emit(h);
      continue;
    }
    const std::uint64_t first = std::max(address, r->base);
    const std::uint64_t start = r->base + (first - r->base) / c.page_bytes * c.page_bytes;
    if (!open || page.alloc_base != r->base || page.address != start) {
      close();
      page = AccessHistogram{.correlation = c.correlation,
                             .address = start,
                             .alloc_base = r->base,
                             .device = c.device,
                             .bin_bytes = static_cast<std::uint32_t>(c.page_bytes)};
      open = true;
    }
    add(page, b);
  }
  close();
}

}  // namespace pasta::device::detail

namespace pasta::device::detail {

// The pages a launch counted on its known ranges (Bin::key = page slot + 1)
// become AccessHistogram events. Each allocation is checked against the
// runtime once per collect; if it changed since it was handed to the
// device, its pages are charged to whatever allocation now holds each
// page's first byte (exact to the page, not to the byte). Returns the
// accesses charged so.
template <class Query, class Emit>
std::uint64_t emit_pages(std::span<Bin> pages, std::span<const KnownRange> known, const Collect& c,
                         Allocations& allocations, Query&& query, Emit&& emit) {
  std::sort(pages.begin(), pages.end(), [](const Bin& a, const Bin& b) { return a.key < b.key; });
  std::uint64_t moved = 0;
  for (const Bin& p : pages) {
    const std::uint64_t slot = p.key - 1;
    auto k =
        std::upper_bound(known.begin(), known.end(), slot,
                         [](std::uint64_t s, const KnownRange& r) { return s < r.first_page; });
    if (k == known.begin()) continue;  // not a slot the device was given
    --k;
    const std::uint64_t address = k->base + (slot - k->first_page) * c.page_bytes;
    if (address >= k->end) continue;
    AccessHistogram h{.correlation = c.correlation,
                      .address = address,
                      .alloc_base = k->base,
                      .device = c.device,
                      .bin_bytes = static_cast<std::uint32_t>(c.page_bytes),
                      .reads = p.reads,
                      .writes = p.writes,
                      .read_bytes = p.read_bytes,
                      .write_bytes = p.write_bytes};
    const Range* r = allocations.find(address, c, query, emit);
    if (!r || r->base != k->base || r->base + r->bytes != k->end) {
      moved += p.reads + p.writes;
      h.alloc_base = r ? r->base : 0;
      if (r) h.address = r->base + (address - r->base) / c.page_bytes * c.page_bytes;
    }
    emit(h);
  }
  return moved;
}

}  // namespace pasta::device::detail
