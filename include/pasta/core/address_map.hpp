// Live allocations by address range: address -> the allocation holding it.
// A sorted flat vector (detail::FlatMap): lookups, one per memory access,
// far outnumber allocations and frees. BasicAddressMap<R> holds any range
// type with `base` and `bytes` members (a tool's own record of a tensor);
// AddressMap holds Allocations.
#pragma once

#include <concepts>
#include <cstdint>
#include <iterator>
#include <optional>

#include <pasta/core/detail/flat_map.hpp>
#include <pasta/core/events.hpp>

namespace pasta {

struct Allocation {
  std::uint64_t base = 0;
  std::uint64_t bytes = 0;
  std::uint32_t device = 0;
  MemKind kind = MemKind::unknown;
};

template <class Range>
concept AddressRange = requires(const Range& r) {
  { r.base } -> std::convertible_to<std::uint64_t>;
  { r.bytes } -> std::convertible_to<std::uint64_t>;
};

template <AddressRange Range>
class BasicAddressMap {
 public:
  // Inserts [base, base+bytes); allocations it overlaps are dropped (their
  // free was missed). Returns how many were dropped.
  std::size_t insert(const Range& a) {
    return insert(a, [](const Range&) {});
  }
  // As above, and calls on_drop(range) for each one dropped, so that a
  // caller keeping totals can take it out of them.
  template <class OnDrop>
  std::size_t insert(const Range& a, OnDrop&& on_drop) {
    std::size_t dropped = 0;
    auto it = by_base_.lower_bound(a.base);
    if (it != by_base_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second.bytes > a.base) it = prev;
    }
    while (it != by_base_.end() && it->first < a.base + (a.bytes ? a.bytes : 1)) {
      on_drop(static_cast<const Range&>(it->second));
      it = by_base_.erase(it);
      ++dropped;
    }
    by_base_.emplace(a.base, a);
    return dropped;
  }

  // Removes the allocation that starts at `base`; nullopt if none does.
  std::optional<Range> erase(std::uint64_t base) {
    auto it = by_base_.find(base);
    if (it == by_base_.end()) return std::nullopt;
    Range a = it->second;
    by_base_.erase(it);
    return a;
  }

  // The live allocation containing `address`, if any.
  const Range* find(std::uint64_t address) const {
    auto it = by_base_.upper_bound(address);
    if (it == by_base_.begin()) return nullptr;
    --it;
    const Range& a = it->second;
    return address - a.base < a.bytes ? &a : nullptr;
  }

  std::size_t size() const { return by_base_.size(); }
  // f(range) for each live range, by base.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [base, range] : by_base_) f(range);
  }

 private:
  detail::FlatMap<std::uint64_t, Range> by_base_;
};

using AddressMap = BasicAddressMap<Allocation>;

}  // namespace pasta
