// Interned strings: kernel, scope and operator names travel in events as
// 32-bit ids, interned once per process. Id 0 is the empty name.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace pasta {

struct NameId {
  std::uint32_t value = 0;
  friend bool operator==(NameId, NameId) = default;
  friend auto operator<=>(NameId, NameId) = default;
  explicit operator bool() const { return value != 0; }
};

class NameTable {
 public:
  NameTable() { strings_.emplace_back(); }

  NameId intern(std::string_view s) {
    if (s.empty()) return {};
    {
      std::shared_lock lock(mutex_);
      if (auto it = ids_.find(s); it != ids_.end()) return it->second;
    }
    std::unique_lock lock(mutex_);
    if (auto it = ids_.find(s); it != ids_.end()) return it->second;
    const NameId id{static_cast<std::uint32_t>(strings_.size())};
    const std::string& stored = strings_.emplace_back(s);
    ids_.emplace(std::string_view(stored), id);
    return id;
  }

  // Views stay valid for the table's lifetime (a deque never moves its elements).
  std::string_view view(NameId id) const {
    std::shared_lock lock(mutex_);
    return id.value < strings_.size() ? std::string_view(strings_[id.value]) : std::string_view();
  }

  std::size_t size() const {
    std::shared_lock lock(mutex_);
    return strings_.size();
  }

 private:
  mutable std::shared_mutex mutex_;
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, NameId> ids_;
};

// The process-wide table that handlers intern into and reports read from.
// Never destroyed: reports written from static destructors and atexit
// handlers (injection libraries) still need it.
inline NameTable& names() {
  static NameTable* table = new NameTable;
  return *table;
}

inline NameId intern(std::string_view s) { return names().intern(s); }
inline std::string_view name_of(NameId id) { return names().view(id); }

}  // namespace pasta

template <>
struct std::hash<pasta::NameId> {
  std::size_t operator()(pasta::NameId id) const noexcept { return id.value; }
};
