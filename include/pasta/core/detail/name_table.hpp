// The table behind pasta::intern and pasta::name_of (core/names.hpp): each
// string once, its id its index.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include <pasta/core/detail/name_id.hpp>

namespace pasta {

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

}  // namespace pasta
