// What nv::Sanitizer can be told, in code (ConfigFor<nv::Sanitizer>'s fields)
// or by PASTA_* variables: where the Compute Sanitizer API is loaded from,
// which patch instruments which memory spaces, and the size of its device
// buffer. No Sanitizer API here: the docs check and pasta-trace read the table.
#pragma once

#include <cstdint>
#include <string>

#include <pasta/core/detail/variables.hpp>

namespace pasta {

// Which device patch instruments memory accesses. `automatic` follows the
// pipeline: device histograms for proc::GpuBucketing, raw records for
// proc::Cpu. The others are for measuring: `noop` (the cost of the patch
// call alone; counts nothing) and `atomic` (one atomic per access instead
// of one per warp and key; histogram pipelines only), `object_atomic` (the
// per-access atomics of AccelProf-style GPU analysis: one counter set per
// allocation, so every access lands on page 0 of its allocation).
enum class AccessPatch : std::uint8_t { automatic, noop, atomic, object_atomic };

// Bits of SanitizerSettings::access_spaces. `async`: the asynchronous copies from
// global memory (cp.async, cp.async.bulk), counted as global reads.
namespace space {
inline constexpr unsigned global = 1, shared = 2, local = 4, async = 8;
}  // namespace space

namespace nv {

struct SanitizerSettings {
  AccessPatch access_patch = AccessPatch::automatic;  // PASTA_ACCESS_PATCH (benchmarks)
  unsigned access_spaces = space::global;  // PASTA_ACCESS_SPACES: global,shared,local,async
  std::uint64_t trace_buffer_bytes = 256ull << 20;    // PASTA_TRACE_BUFFER: device access records
  // PASTA_SANITIZER_LIB: the libsanitizer-public.so tried first
  // (detail/api.hpp searches on if it does not load).
  std::string library;
};

namespace detail::sanitizer_rows {
namespace var = pasta::detail::var;
using S = SanitizerSettings;
inline constexpr pasta::detail::Choice<AccessPatch> patches[] = {
    {"auto", AccessPatch::automatic},
    {"noop", AccessPatch::noop},
    {"atomic", AccessPatch::atomic},
    {"object_atomic", AccessPatch::object_atomic}};
inline constexpr pasta::detail::Flag spaces[] = {
    {"global", space::global},
    {"shared", space::shared},
    {"local", space::local},
    {"async", space::async}};

inline constexpr pasta::detail::Variable<SanitizerSettings> sanitizer_variables[] = {
    var::one_of<&S::access_patch, patches>("PASTA_ACCESS_PATCH",
                                           "auto, noop, atomic or object_atomic",
                                           "the previous patch"),
    var::flags<&S::access_spaces, spaces>("PASTA_ACCESS_SPACES",
                                          "a comma-separated list of global, shared, local, "
                                          "async",
                                          "the previous spaces"),
    var::size<&S::trace_buffer_bytes, 1ull << 20, 64ull << 30>(
        "PASTA_TRACE_BUFFER", "a size from 1M to 64G (suffixes K, M, G)"),
    var::text<&S::library>("PASTA_SANITIZER_LIB", "the full path of libsanitizer-public.so"),
};
inline const bool entered = pasta::detail::enter_known_variables(sanitizer_variables);
}  // namespace detail::sanitizer_rows

using detail::sanitizer_rows::sanitizer_variables;
constexpr const auto& variables_of(const SanitizerSettings*) { return sanitizer_variables; }

}  // namespace nv
}  // namespace pasta
