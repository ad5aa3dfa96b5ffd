// What nv::Sanitizer did, in words: its report's summary, why the reports
// are partial (records or counts lost), and its line at exit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/report.hpp>
#include <pasta/nv/sanitizer/detail/device.hpp>

namespace pasta::nv::detail {

inline std::string sanitizer_partial_reason(const SanitizerStats& s, std::string_view error,
                                            std::uint64_t trace_buffer_bytes) {
  std::string why(error);
  if (const auto lost = s.pc_lost.load())
    why += fmt::format(
        "{}the per-instruction count table and its overflow records filled in {} launches and "
        "{} counts were lost; raise PASTA_TRACE_BUFFER",
        why.empty() ? "" : "; ", s.pc_lost_launches.load(), lost);
  if (const auto lost = s.records_lost.load())
    why += fmt::format(
        "{}the device trace buffer ({} MiB) filled in {} launches and {} access records were "
        "lost; raise PASTA_TRACE_BUFFER",
        why.empty() ? "" : "; ", trace_buffer_bytes >> 20, s.overflowed_launches.load(), lost);
  return why;
}

inline void sanitizer_report(Report& out, const SanitizerStats& s, AccessMode mode,
                             std::string_view patch, std::uint64_t trace_buffer_bytes,
                             std::string_view error) {
  out.summary("device patch", std::string(patch));
  out.summary("kernel launches", s.launches.load());
  out.summary("launches instrumented", s.instrumented.load());
  out.summary("modules patched", s.modules_patched.load());
  if (s.modules_skipped.load())
    out.summary("modules left unpatched (no kernel passes the filter)", s.modules_skipped.load());
  out.summary("patching time (ms)", s.patch_ns.load() / 1e6);
  out.summary("post-pass and copy time (ms)", s.post_ns.load() / 1e6);
  out.summary("bytes copied to the host", s.copy_bytes.load());
  if (mode == AccessMode::histogram) out.summary("histogram bins copied", s.bins.load());
  if (mode == AccessMode::pcs) {
    out.summary("per-instruction counts copied", s.pc_counts.load());
    out.summary("of them overflow records", s.pc_overflow.load());
    out.summary("per-instruction counts lost (table and overflow full)", s.pc_lost.load());
    out.summary("count table growths", s.pc_table_growths.load());
    out.summary("most regions in one launch", s.pc_regions.load());
    if (s.pc_overfull_regions.load())
      out.summary("regions under more than 16 strided views (views merged)",
                  s.pc_overfull_regions.load());
    if (s.pc_too_large.load())
      out.summary("launches not instrumented (function start unknown, or past a key's reach)",
                  s.pc_too_large.load());
  }
  if (mode == AccessMode::trace) {
    out.summary("access records", s.records.load());
    out.summary("access records lost (buffer full)", s.records_lost.load());
    out.summary("trace buffer (bytes)", trace_buffer_bytes);
  }
  if (s.graph_kernels.load())
    out.summary("graph kernel launches (run uninstrumented)", s.graph_kernels.load());
  if (!error.empty()) out.summary("error", std::string(error));
}

// PASTA_VERBOSE's line when the handler stops.
inline std::string sanitizer_stop_line(const SanitizerStats& s) {
  return fmt::format(
      "sanitizer handler: {} launches, {} instrumented, {} modules patched in {:.1f} ms, "
      "post-pass {:.1f} ms, {} records ({} lost), {} bins, {} per-instruction counts ({} lost)",
      s.launches.load(), s.instrumented.load(), s.modules_patched.load(), s.patch_ns.load() / 1e6,
      s.post_ns.load() / 1e6, s.records.load(), s.records_lost.load(), s.bins.load(),
      s.pc_counts.load(), s.pc_lost.load());
}

}  // namespace pasta::nv::detail
