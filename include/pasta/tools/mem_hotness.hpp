// Which memory the kernels touch: per allocation and per page, accesses,
// bytes and the read/write split, from raw access records or from
// histograms reduced on the device. Answers "which objects are hot", and
// draws when: mem_hotness.svg, page hotness of the hottest allocations over
// kernel launches.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/access_counts.hpp>
#include <pasta/core/config.hpp>
#include <pasta/core/detail/api.hpp>
#include <pasta/core/detail/files.hpp>
#include <pasta/core/detail/flat_map.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/report.hpp>
#include <pasta/tools/detail/heatmap.hpp>

namespace pasta::tools {

class MemHotness {
 public:
  static constexpr std::string_view name = "mem_hotness";

  using Counts = AccessCounts;
  using Pages = PageCounts;

  struct Object {
    std::uint64_t base = 0, bytes = 0, page_count = 0;
    std::uint32_t device = 0;
    MemKind kind = MemKind::unknown;
    bool freed = false;
    Pages pages;
    mutable detail::Heatmap heat;               // pages over launches, for the picture
    mutable std::uint64_t heat_launch = ~0ull;  // the launch its heat row array holds
    // Summed from the pages when asked: one add per access, not two.
    Counts total() const { return pages.sum(); }
  };

  MemHotness() = default;
  // Config::page_bytes is a power of two (apply_env checks); a page index is
  // a shift, not a division, on the per-access path.
  explicit MemHotness(const Config& cfg)
      : page_bytes_(std::bit_floor(std::max<std::uint64_t>(cfg.page_bytes, 1))),
        page_shift_(std::countr_zero(page_bytes_)),
        output_dir_(cfg.output_dir) {}

  static constexpr std::size_t heatmap_panels = 8;

  void on(const MemAlloc& e);  // tools/detail/mem_hotness_impl.hpp

  void on(const MemFree& e);

  // An access counts as a read and/or a write by its flags; an atomic is both.
  void on(const MemAccess& e);

  void on(const AccessHistogram& e);

  // Accesses that hit no known allocation.
  const Counts& unattributed() const { return unattributed_; }
  const std::vector<Object>& objects() const { return objects_; }
  std::uint64_t page_bytes() const { return page_bytes_; }

  void report(Report& out) const;

 private:
  static std::string hex(std::uint64_t v) { return fmt::format("0x{:x}", v); }

  // The live allocation at `alloc_base`; accesses come in runs on one
  // allocation, so the last lookup is kept and the search stays out of line.
  Object* object(std::uint64_t alloc_base);
  [[gnu::noinline]] Object* find_object(std::uint64_t alloc_base) {
    auto it = alloc_base ? live_.find(alloc_base) : live_.end();
    if (it == live_.end()) return nullptr;
    last_base_ = alloc_base;
    last_index_ = it->second;
    return &objects_[last_index_];
  }

  // report()'s parts: the accessed allocations with their sums (most
  // accessed first), the objects and pages tables, the heatmap's file.
  struct Hot {
    const Object* o;
    Counts total;
  };
  std::vector<Hot> hottest() const;
  void tables(Report& out, const std::vector<Hot>& hot) const;
  void write_heatmap(Report& out, const std::vector<Hot>& hot) const;

  // Accesses arrive launch by launch; the heatmap keeps a column per launch.
  void next_launch(std::uint64_t correlation);
  void heat(const Object& o, std::uint64_t page, std::uint64_t n);

  std::uint64_t page_bytes_ = 64 * 1024;
  int page_shift_ = 16;
  std::string output_dir_;  // where mem_hotness.svg goes; empty: no picture
  std::uint64_t launch_correlation_ = ~0ull, ordinal_ = 0, launches_ = 0;
  std::vector<Object> objects_;                              // every allocation, in order
  pasta::detail::FlatMap<std::uint64_t, std::size_t> live_;  // base -> index into objects_
  Counts unattributed_;
  std::uint64_t last_base_ = 0;
  std::size_t last_index_ = 0;
};

}  // namespace pasta::tools

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/tools/detail/mem_hotness_impl.hpp>
#endif
