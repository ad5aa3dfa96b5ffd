// FNV-1a, 64-bit: one step per value (nv::Cupti's operator paths and launch
// signatures) or per byte (tools::StallBlame's machine-code hashes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace pasta::detail {

inline constexpr std::uint64_t fnv_offset = 0xcbf29ce484222325ull;

constexpr std::uint64_t fnv_step(std::uint64_t h, std::uint64_t v) {
  return (h ^ v) * 0x100000001b3ull;
}

inline std::uint64_t fnv_bytes(std::span<const std::byte> bytes) {
  std::uint64_t h = fnv_offset;
  for (std::byte b : bytes) h = fnv_step(h, static_cast<std::uint8_t>(b));
  return h;
}

}  // namespace pasta::detail
