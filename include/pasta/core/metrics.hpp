// The hardware metrics of KernelCounters, each under the name ncu gives it,
// so numbers from pasta and from `ncu --metrics` can be compared column by
// column. A profiling handler collects `collect` and fills the field; tools
// and reports read the field and print `ncu`.
#pragma once

#include <array>
#include <limits>
#include <span>
#include <string_view>

#include <pasta/core/events.hpp>

namespace pasta::metrics {

struct Metric {
  std::string_view key;   // the JSON key and CSV column
  std::string_view ncu;   // the ncu metric it reports
  std::string_view unit;  // "bytes", "%", "instructions", "flop"
  bool additive;          // summed over kernels; otherwise averaged, weighted by device time
  double KernelCounters::*field;
};

inline constexpr std::array<Metric, 10> all{{
    {"dram_bytes_read", "dram__bytes_read.sum", "bytes", true, &KernelCounters::dram_bytes_read},
    {"dram_bytes_write", "dram__bytes_write.sum", "bytes", true, &KernelCounters::dram_bytes_write},
    {"dram_throughput_pct", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "%", false,
     &KernelCounters::dram_throughput_pct},
    {"sm_throughput_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", false,
     &KernelCounters::sm_throughput_pct},
    {"l1_hit_rate_pct", "l1tex__t_sector_hit_rate.pct", "%", false,
     &KernelCounters::l1_hit_rate_pct},
    {"l2_hit_rate_pct", "lts__t_sector_hit_rate.pct", "%", false, &KernelCounters::l2_hit_rate_pct},
    {"achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active", "%", false,
     &KernelCounters::achieved_occupancy_pct},
    {"tensor_active_pct", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "%",
     false, &KernelCounters::tensor_active_pct},
    {"inst_executed", "smsp__inst_executed.sum", "instructions", true,
     &KernelCounters::inst_executed},
    {"flops",
     "smsp__sass_thread_inst_executed_op_{h,f,d}{add,mul}_pred_on.sum + "
     "2 * smsp__sass_thread_inst_executed_op_{h,f,d}fma_pred_on.sum",
     "flop", true, &KernelCounters::flops},
}};

// How a counter's value reaches its field: added, times the counter's
// weight; as one side of a hit rate, 100 * hits / sectors; or not at all
// (ignored: measured for how CUPTI then packs the others into passes).
enum class Part : unsigned char { sum, hits, sectors, ignored };

// What a profiling handler asks the hardware for: the ncu metrics above,
// the flop count as its nine parts, and the L2 hit rate as the two raw
// counts ncu divides for it, lookup hits over sectors (from_counters()).
//
// Why not lts__t_sector_hit_rate.pct itself: on GH100 its two counts cannot
// share a pass; every profiled range carries ~45K L2 sectors that are not
// the kernel's, nearly all hits (bench/gpu/probe); and how much of that each
// pass counts depends on how CUPTI packs the set into passes, which follows
// the order of the names. Measured on the H100 (a 12-block GPT, the
// bench's first launches, docs/op-profile.md): with the rate in the set,
// 18 of 92 kernels read above 100%, up to 133% (a one-block reduction with
// 65 sectors of its own: 132%, ncu 93%); with the raw counts in the order
// below, 8 of 92, up to 103% (that reduction 99.2%; ncu: 5 of 92, up to
// 102.5%). Other orders gave 133% (hits, sectors, misses) and 135% (hits,
// sectors): the miss count is measured for that packing only
// (Part::ignored). Misses do not give the rate: GEMMs look up 6-17% more
// sectors than they count, in ncu too, so 1 - misses / sectors reads their
// rate 10-15 points low.
struct Counter {
  std::string_view name;
  double KernelCounters::*field;
  double weight;
  Part part = Part::sum;
};

inline constexpr std::array<Counter, 20> counters{{
    {"dram__bytes_read.sum", &KernelCounters::dram_bytes_read, 1},
    {"dram__bytes_write.sum", &KernelCounters::dram_bytes_write, 1},
    {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", &KernelCounters::dram_throughput_pct,
     1},
    {"sm__throughput.avg.pct_of_peak_sustained_elapsed", &KernelCounters::sm_throughput_pct, 1},
    {"l1tex__t_sector_hit_rate.pct", &KernelCounters::l1_hit_rate_pct, 1},
    {"lts__t_sectors_lookup_miss.sum", &KernelCounters::l2_hit_rate_pct, 1, Part::ignored},
    {"lts__t_sectors.sum", &KernelCounters::l2_hit_rate_pct, 1, Part::sectors},
    {"lts__t_sectors_lookup_hit.sum", &KernelCounters::l2_hit_rate_pct, 1, Part::hits},
    {"sm__warps_active.avg.pct_of_peak_sustained_active", &KernelCounters::achieved_occupancy_pct,
     1},
    {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
     &KernelCounters::tensor_active_pct, 1},
    {"smsp__inst_executed.sum", &KernelCounters::inst_executed, 1},
    {"smsp__sass_thread_inst_executed_op_hadd_pred_on.sum", &KernelCounters::flops, 1},
    {"smsp__sass_thread_inst_executed_op_hmul_pred_on.sum", &KernelCounters::flops, 1},
    {"smsp__sass_thread_inst_executed_op_hfma_pred_on.sum", &KernelCounters::flops, 2},
    {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", &KernelCounters::flops, 1},
    {"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", &KernelCounters::flops, 1},
    {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", &KernelCounters::flops, 2},
    {"smsp__sass_thread_inst_executed_op_dadd_pred_on.sum", &KernelCounters::flops, 1},
    {"smsp__sass_thread_inst_executed_op_dmul_pred_on.sum", &KernelCounters::flops, 1},
    {"smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", &KernelCounters::flops, 2},
}};

// A field a measurement did not collect holds NaN (KernelCounters' fields
// from a partial set of counters; the trace keeps them as they are).
inline constexpr double not_measured = std::numeric_limits<double>::quiet_NaN();
inline bool measured(double v) { return !__builtin_isnan(v); }  // (no <cmath> in every unit)

// The metrics whose values depend on what the caches hold when the kernel
// starts, most wanted first. Replay passes disturb the caches (the profiler
// saves and restores the memory a kernel may write), so a profiling handler
// measures again as many of these as one pass can hold, with L2 flushed
// first, as ncu does.
inline constexpr std::array<double KernelCounters::*, 5> cache_sensitive{
    &KernelCounters::dram_bytes_read, &KernelCounters::dram_bytes_write,
    &KernelCounters::l2_hit_rate_pct, &KernelCounters::l1_hit_rate_pct,
    &KernelCounters::dram_throughput_pct};

// Whether `field` is the sum of its counters; otherwise a hit rate of its
// hits and sectors (Part).
constexpr bool summed(double KernelCounters::*field) {
  for (const Counter& c : counters)
    if (c.field == field && c.part != Part::sum) return false;
  return true;
}

// Sets the fields of the counters `which` names (indices into `counters`)
// from `values`, one per index in order: counters of one field summed with
// their weights, a hit rate from its hits and sectors (0 with no sectors,
// not_measured without both); every other field is not_measured.
inline KernelCounters from_counters(std::span<const std::size_t> which,
                                    std::span<const double> values) {
  KernelCounters c{};
  for (const auto& m : all) c.*m.field = not_measured;
  for (std::size_t i : which) c.*counters[i].field = 0;
  const std::size_t n = which.size() < values.size() ? which.size() : values.size();
  for (std::size_t k = 0; k < n; ++k)
    if (counters[which[k]].part == Part::sum)
      c.*counters[which[k]].field += counters[which[k]].weight * values[k];
  for (const auto& m : all) {
    // A rate none of whose counters were given stays not_measured.
    if (summed(m.field) || !measured(c.*m.field)) continue;
    double hits = not_measured, sectors = not_measured;
    for (std::size_t k = 0; k < n; ++k) {
      const Counter& counter = counters[which[k]];
      if (counter.field != m.field) continue;
      if (counter.part == Part::hits) hits = values[k];
      if (counter.part == Part::sectors) sectors = values[k];
    }
    c.*m.field = !measured(hits) || !measured(sectors) ? not_measured
                 : sectors > 0                         ? 100 * hits / sectors
                                                       : 0.0;
  }
  return c;
}

// Floating-point operations per DRAM byte (ncu's roofline x axis); 0 when
// the kernel moved no DRAM bytes, not_measured when either is.
inline double arithmetic_intensity(const KernelCounters& c) {
  const double bytes = c.dram_bytes_read + c.dram_bytes_write;
  if (!measured(bytes) || !measured(c.flops)) return not_measured;
  return bytes > 0 ? c.flops / bytes : 0.0;
}

}  // namespace pasta::metrics
