// Operators by id, for device work that completes after its operator ended.
// Direct-mapped on the id: ids are handed out in order, and an activity
// arrives long before `slots` more operators began. A newer operator evicts
// the one `slots` ids before it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pasta::detail {

inline constexpr std::size_t op_table_slots = std::size_t{1} << 17;

template <class Op>  // Op has `std::uint64_t id`, never 0 for a real operator
class OpTable {
 public:
  static constexpr std::size_t slots = op_table_slots;

  void put(const Op& op) {
    if (table_.empty()) table_.resize(slots);  // on first use: slots * sizeof(Op)
    table_[op.id & (slots - 1)] = op;
  }
  // The operator `id`, or nullptr if it was never put or was evicted.
  const Op* find(std::uint64_t id) const {
    if (table_.empty() || id == 0) return nullptr;
    const Op& op = table_[id & (slots - 1)];
    return op.id == id ? &op : nullptr;
  }
  Op* find(std::uint64_t id) {
    return const_cast<Op*>(static_cast<const OpTable*>(this)->find(id));
  }

 private:
  std::vector<Op> table_;
};

}  // namespace pasta::detail
