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
    return &by_base_.emplace(r.base, Entry{r, c.epoch}).first->second.range;
  }

  Map by_base_;
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
