// The units and shares the tools' tables print: milliseconds from nanoseconds,
// a part's percentage of a whole, a part's fraction of a whole (0 when the
// whole is nothing).
#pragma once

#include <cstdint>

namespace pasta::detail {

inline constexpr double ms_per_ns = 1e-6;

inline double share_pct(std::uint64_t part, std::uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

inline double share_of(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

}  // namespace pasta::detail
