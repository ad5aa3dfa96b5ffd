// Live allocations by address range: address -> the allocation holding it.
// A sorted flat vector (Boost.Container): lookups, one per memory access,
// far outnumber allocations and frees.
#pragma once

#include <boost/container/flat_map.hpp>

#include <cstdint>
#include <iterator>
#include <optional>

#include <pasta/core/events.hpp>

namespace pasta {

struct Allocation {
  std::uint64_t base = 0;
  std::uint64_t bytes = 0;
  std::uint32_t device = 0;
  MemKind kind = MemKind::unknown;
};

class AddressMap {
 public:
  // Inserts [base, base+bytes); allocations it overlaps are dropped (their
  // free was missed). Returns how many were dropped.
  std::size_t insert(const Allocation& a) {
    std::size_t dropped = 0;
    auto it = by_base_.lower_bound(a.base);
    if (it != by_base_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second.bytes > a.base) it = prev;
    }
    while (it != by_base_.end() && it->first < a.base + (a.bytes ? a.bytes : 1)) {
      it = by_base_.erase(it);
      ++dropped;
    }
    by_base_.emplace(a.base, a);
    return dropped;
  }

  // Removes the allocation that starts at `base`; nullopt if none does.
  std::optional<Allocation> erase(std::uint64_t base) {
    auto it = by_base_.find(base);
    if (it == by_base_.end()) return std::nullopt;
    Allocation a = it->second;
    by_base_.erase(it);
    return a;
  }

  // The live allocation containing `address`, if any.
  const Allocation* find(std::uint64_t address) const {
    auto it = by_base_.upper_bound(address);
    if (it == by_base_.begin()) return nullptr;
    --it;
    const Allocation& a = it->second;
    return address - a.base < a.bytes ? &a : nullptr;
  }

  std::size_t size() const { return by_base_.size(); }

 private:
  boost::container::flat_map<std::uint64_t, Allocation> by_base_;
};

}  // namespace pasta
