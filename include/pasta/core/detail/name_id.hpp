// The id an interned string travels as (core/names.hpp). Id 0 is the empty name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pasta {

struct NameId {
  std::uint32_t value = 0;
  friend bool operator==(NameId, NameId) = default;
  friend auto operator<=>(NameId, NameId) = default;
  explicit operator bool() const { return value != 0; }
};

}  // namespace pasta

// (std::hash is declared by <string_view>; <functional> is not needed for it.)
template <>
struct std::hash<pasta::NameId> {
  std::size_t operator()(pasta::NameId id) const noexcept { return id.value; }
};

