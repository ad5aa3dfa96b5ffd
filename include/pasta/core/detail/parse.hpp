// Whole numbers from environment variables and files, without exceptions.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

namespace pasta::detail {

// "123" -> 123; nullopt for an empty string, a sign, or anything after the digits.
inline std::optional<std::uint64_t> parse_uint(std::string_view s) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace pasta::detail
