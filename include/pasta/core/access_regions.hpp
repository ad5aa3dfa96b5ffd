// How a tool that counts memory accesses per instruction tells memory
// apart, for one launch: the ranges it resolves addresses to (allocations,
// tensors, views) and the strided views whose elements it tells from their
// gaps. A handler that reduces on the device (nv::Sanitizer under
// proc::GpuBucketing) counts accesses under (pc, region, the strided views
// holding the address), so that every address one count stands for
// resolves as the count's one address does: nothing the tool would see in
// raw records is merged away.
//
// A tool offers them with
//   void access_regions(std::uint64_t correlation, pasta::AccessRegions& out) const;
// called at each instrumented launch, after the launch's KernelLaunch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include <pasta/core/detail/region_key.hpp>

namespace pasta {

class AccessRegions {
 public:
  using View = detail::region::View;
  using Dim = detail::region::Dim;
  using Checks = detail::region::Checks;

  void clear() {
    bounds_.clear();
    views_.clear();
    dims_.clear();
    checks_.clear();
    check_views_.clear();
    built_ = false;
    overfull_ = 0;
  }

  // Addresses in [base, base + bytes) are told apart from those outside.
  void range(std::uint64_t base, std::uint64_t bytes) {
    if (!bytes) return;
    bounds_.push_back(base);
    bounds_.push_back(base + bytes);
    built_ = false;
  }
  // And, within it, the view's elements from its gaps: dims are (size,
  // stride) in elements from the largest stride down (Targets::holds).
  void strided(std::uint64_t base, std::uint64_t bytes, std::uint32_t element_bytes,
               std::span<const Dim> dims) {
    range(base, bytes);
    if (!bytes || !element_bytes) return;
    views_.push_back(View{base, bytes, element_bytes, static_cast<std::uint32_t>(dims_.size()),
                          static_cast<std::uint32_t>(dims.size()), 0});
    dims_.insert(dims_.end(), dims.begin(), dims.end());
  }

  // Sorts the bounds and lists each region's strided views. Regions under
  // more than region::max_checks of them test only the first ones: their
  // keys may merge addresses a tool tells apart (overfull() counts them).
  void build() {
    if (built_) return;
    std::sort(bounds_.begin(), bounds_.end());
    bounds_.erase(std::unique(bounds_.begin(), bounds_.end()), bounds_.end());
    // Equal views are one view.
    std::vector<std::uint32_t> kept;
    for (std::uint32_t i = 0; i < views_.size(); ++i)
      if (std::none_of(kept.begin(), kept.end(),
                       [&](std::uint32_t k) { return equal_views(k, i); }))
        kept.push_back(i);
    std::vector<std::vector<std::uint32_t>> per_region(bounds_.size() + 1);
    for (const std::uint32_t v : kept) {
      const View& x = views_[v];
      const std::uint32_t first = index_of(x.base), last = index_of(x.base + x.bytes - 1);
      for (std::uint32_t r = first; r <= last; ++r) per_region[r].push_back(v);
    }
    checks_.assign(per_region.size(), Checks{0, 0});
    check_views_.clear();
    for (std::size_t r = 0; r < per_region.size(); ++r) {
      const auto& list = per_region[r];
      const std::uint32_t n = static_cast<std::uint32_t>(
          std::min<std::size_t>(list.size(), detail::region::max_checks));
      if (list.size() > n) ++overfull_;
      checks_[r] = Checks{static_cast<std::uint32_t>(check_views_.size()), n};
      check_views_.insert(check_views_.end(), list.begin(), list.begin() + n);
    }
    built_ = true;
  }

  // After build(): what the device reads (region::Table's arrays).
  std::span<const std::uint64_t> bounds() const { return bounds_; }
  std::span<const Checks> checks() const { return checks_; }
  std::span<const std::uint32_t> check_views() const { return check_views_; }
  std::span<const View> views() const { return views_; }
  std::span<const Dim> dims() const { return dims_; }
  std::uint64_t overfull() const { return overfull_; }
  std::size_t regions() const { return bounds_.size() + 1; }

  // A region::Table over this object's arrays (host pointers: the host's
  // own reference, as the CPU tests use it).
  detail::region::Table table() const {
    return {bounds_.data(),
            static_cast<std::uint32_t>(bounds_.size()),
            static_cast<std::uint32_t>(views_.size()),
            checks_.data(),
            check_views_.data(),
            views_.data(),
            dims_.data()};
  }

 private:
  std::uint32_t index_of(std::uint64_t address) const {
    return static_cast<std::uint32_t>(std::upper_bound(bounds_.begin(), bounds_.end(), address) -
                                      bounds_.begin());
  }
  bool equal_views(std::uint32_t a, std::uint32_t b) const {
    const View &x = views_[a], &y = views_[b];
    if (x.base != y.base || x.bytes != y.bytes || x.element_bytes != y.element_bytes ||
        x.dim_count != y.dim_count)
      return false;
    for (std::uint32_t d = 0; d < x.dim_count; ++d) {
      const Dim &p = dims_[x.dim_first + d], &q = dims_[y.dim_first + d];
      if (p.size != q.size || p.stride != q.stride) return false;
    }
    return true;
  }

  std::vector<std::uint64_t> bounds_;
  std::vector<View> views_;
  std::vector<Dim> dims_;
  std::vector<Checks> checks_;
  std::vector<std::uint32_t> check_views_;
  std::uint64_t overfull_ = 0;
  bool built_ = false;
};

}  // namespace pasta
