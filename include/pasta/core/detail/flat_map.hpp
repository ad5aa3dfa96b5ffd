// A map kept as one sorted vector: lookups (one per memory access in the
// address maps) far outnumber insertions and erasures, and a vector is what
// a lookup walks fastest. The part of Boost.Container's flat_map that pasta
// uses, without its 14,000 preprocessed lines in every translation unit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace pasta::detail {

template <class Key, class Value>
class FlatMap {
 public:
  using value_type = std::pair<Key, Value>;
  using iterator = typename std::vector<value_type>::iterator;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }

  // The first entry whose key is not less than (lower) or greater than (upper) `k`.
  iterator lower_bound(const Key& k) {
    return std::lower_bound(begin(), end(), k, [](const value_type& e, const Key& x) {
      return e.first < x;
    });
  }
  const_iterator lower_bound(const Key& k) const {
    return std::lower_bound(begin(), end(), k, [](const value_type& e, const Key& x) {
      return e.first < x;
    });
  }
  iterator upper_bound(const Key& k) {
    return std::upper_bound(begin(), end(), k, [](const Key& x, const value_type& e) {
      return x < e.first;
    });
  }
  const_iterator upper_bound(const Key& k) const {
    return std::upper_bound(begin(), end(), k, [](const Key& x, const value_type& e) {
      return x < e.first;
    });
  }
  iterator find(const Key& k) {
    const auto it = lower_bound(k);
    return it != end() && !(k < it->first) ? it : end();
  }
  const_iterator find(const Key& k) const {
    const auto it = lower_bound(k);
    return it != end() && !(k < it->first) ? it : end();
  }

  // Inserts (k, v) unless k is there; the entry, and whether it is new.
  template <class V>
  std::pair<iterator, bool> emplace(const Key& k, V&& v) {
    const auto it = lower_bound(k);
    if (it != end() && !(k < it->first)) return {it, false};
    return {items_.insert(it, value_type(k, std::forward<V>(v))), true};
  }
  Value& operator[](const Key& k) { return emplace(k, Value{}).first->second; }
  iterator erase(const_iterator it) { return items_.erase(it); }

 private:
  std::vector<value_type> items_;
};

}  // namespace pasta::detail
