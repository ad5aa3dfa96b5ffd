// What bounds a kernel or an operator, from its hardware counters and the
// GPU's ceilings: the verdict, where it sits on the roofline, and the time it
// would take at its attainable ceiling (what fixing it could save). No
// vendor API: tested alone (tests/tools/roofline_test.cpp).
//
// The verdict follows Nsight Compute's speed-of-light reading: a kernel whose
// DRAM and SM throughput are both under 60% of peak is latency-bound (or
// launch-bound when its launches average under 5 us); otherwise it is bound
// by the larger of the two, compute by the tensor pipes when they were
// active at least 10% of the time. FLOPs are the FP instructions the counters
// count exactly, plus, for tensor-core work, the tensor pipes' activity times
// the tensor peak (an estimate: the counters count no tensor FLOPs).
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace pasta::detail {

struct Ceilings {
  std::string_view match;  // a device whose name contains this
  double dram_bytes_per_s = 0, fp32_flops_per_s = 0, tensor_flops_per_s = 0;
  std::string source;  // where the numbers come from, for the report
  bool known() const { return dram_bytes_per_s > 0 && fp32_flops_per_s > 0; }
};

// NVIDIA's datasheet numbers: DRAM bandwidth, FP32 (non-tensor) and dense
// BF16 tensor peaks, without sparsity. The first entry whose text the
// device's name contains wins.
struct CeilingRow {
  std::string_view match, product;
  double dram_tbps, fp32_tflops, tensor_tflops;
};
inline constexpr std::array<CeilingRow, 12> ceiling_table{{
    {"H200", "H200 SXM", 4.8, 67, 989},
    {"H100 NVL", "H100 NVL", 3.9, 60, 835},
    {"H100 PCIe", "H100 PCIe", 2.0, 51, 756},
    {"H100", "H100 SXM", 3.35, 67, 989},
    {"B200", "B200", 8.0, 80, 2250},
    {"A100-SXM4-80GB", "A100 SXM 80GB", 2.039, 19.5, 312},
    {"A100 80GB PCIe", "A100 PCIe 80GB", 1.935, 19.5, 312},
    {"A100-SXM4-40GB", "A100 SXM 40GB", 1.555, 19.5, 312},
    {"A100-PCIE-40GB", "A100 PCIe 40GB", 1.555, 19.5, 312},
    {"L40S", "L40S", 0.864, 91.6, 362},
    {"L4", "L4", 0.3, 30.3, 121},
    {"A10G", "A10G", 0.6, 31.2, 70},
}};

// "dram_tbps=4.8,fp32_tflops=67,tensor_tflops=989" (PASTA_CEILINGS): the
// ceilings it gives, or none with `error` set.
inline Ceilings parse_ceilings(std::string_view text, std::string& error) {
  Ceilings c;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    double v = 0;
    const std::string_view key = item.substr(0, eq), value = eq == std::string_view::npos
                                                                 ? std::string_view{}
                                                                 : item.substr(eq + 1);
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (eq == std::string_view::npos || ec != std::errc{} || end != value.data() + value.size() ||
        v <= 0) {
      error = "'" + std::string(item) + "' is not key=positive number";
      return {};
    }
    if (key == "dram_tbps")
      c.dram_bytes_per_s = v * 1e12;
    else if (key == "fp32_tflops")
      c.fp32_flops_per_s = v * 1e12;
    else if (key == "tensor_tflops")
      c.tensor_flops_per_s = v * 1e12;
    else {
      error = "unknown key '" + std::string(key) + "' (dram_tbps, fp32_tflops, tensor_tflops)";
      return {};
    }
  }
  if (!c.known()) {
    error = "needs at least dram_tbps and fp32_tflops";
    return {};
  }
  if (c.tensor_flops_per_s == 0) c.tensor_flops_per_s = c.fp32_flops_per_s;
  c.source = "PASTA_CEILINGS";
  return c;
}

inline Ceilings unknown(std::string why) {
  Ceilings c;
  c.source = std::move(why);
  return c;
}

// The ceilings of device `name`: from `override_text` (PASTA_CEILINGS) when
// set, else from the datasheet table; unknown ceilings say why in `source`.
inline Ceilings ceilings_for(std::string_view name, std::string_view override_text) {
  if (!override_text.empty()) {
    std::string error;
    Ceilings c = parse_ceilings(override_text, error);
    if (c.known()) return c;
    return unknown("none: PASTA_CEILINGS " + error);
  }
  for (const CeilingRow& r : ceiling_table)
    if (!r.match.empty() && name.find(r.match) != std::string_view::npos) {
      char text[160];
      const int n = std::snprintf(
          text, sizeof text,
          "NVIDIA's %.*s datasheet: DRAM %.3g TB/s, FP32 %.3g TFLOP/s, BF16 tensor %.4g "
          "TFLOP/s (dense)",
          static_cast<int>(r.product.size()), r.product.data(), r.dram_tbps, r.fp32_tflops,
          r.tensor_tflops);
      return {.match = r.match,
              .dram_bytes_per_s = r.dram_tbps * 1e12,
              .fp32_flops_per_s = r.fp32_tflops * 1e12,
              .tensor_flops_per_s = r.tensor_tflops * 1e12,
              .source = std::string(text, static_cast<std::size_t>(std::max(n, 0)))};
    }
  return unknown("none known for '" + std::string(name.empty() ? "an unnamed GPU" : name) +
                 "': set PASTA_CEILINGS=dram_tbps=...,fp32_tflops=...,tensor_tflops=... for a "
                 "roofline and savings; verdicts use the throughput shares alone");
}

enum class Bound : unsigned char { unknown, launch, latency, memory, compute_tensor, compute_fp };

inline std::string_view to_string(Bound b) {
  switch (b) {
    case Bound::launch: return "launch-bound";
    case Bound::latency: return "latency-bound";
    case Bound::memory: return "memory-bound";
    case Bound::compute_tensor: return "compute-bound (tensor)";
    case Bound::compute_fp: return "compute-bound (FP pipes)";
    case Bound::unknown: break;
  }
  return "unknown";
}

// A kernel's or an operator's counters, summed over its launches (rates
// weighted by device time).
struct RooflineInput {
  double device_ns = 0;
  double launches = 0;
  double dram_bytes = 0;  // read + write
  double fp_flops = 0;    // FP instructions, an FMA two (KernelCounters::flops)
  double dram_pct = 0, sm_pct = 0, tensor_pct = 0;
};

struct Verdict {
  Bound bound = Bound::unknown;
  double flops = 0;            // fp_flops plus the tensor estimate
  double intensity = 0;        // flops per DRAM byte; 0 when no byte moved
  double flops_per_s = 0;      // achieved
  double attainable_ns = 0;    // at the ceilings: 0 when they are unknown
  double saving_ns = 0;        // device_ns - attainable_ns, at least 0
};

inline constexpr double launch_bound_ns = 5'000;  // mean launch shorter than this
inline constexpr double busy_pct = 60;            // a unit this busy or more bounds the kernel
inline constexpr double tensor_busy_pct = 10;     // tensor pipes this active: tensor work

inline Verdict judge(const RooflineInput& in, const Ceilings& c) {
  Verdict v;
  if (in.device_ns <= 0) return v;
  const double seconds = in.device_ns * 1e-9;
  const double tensor_flops =
      c.known() ? in.tensor_pct / 100 * c.tensor_flops_per_s * seconds : 0;
  v.flops = in.fp_flops + tensor_flops;
  v.intensity = in.dram_bytes > 0 ? v.flops / in.dram_bytes : 0;
  v.flops_per_s = v.flops / seconds;
  const double busiest = std::max(in.dram_pct, in.sm_pct);
  if (busiest < busy_pct)
    v.bound = in.launches > 0 && in.device_ns / in.launches < launch_bound_ns ? Bound::launch
                                                                              : Bound::latency;
  else if (in.dram_pct >= in.sm_pct)
    v.bound = Bound::memory;
  else
    v.bound = in.tensor_pct >= tensor_busy_pct ? Bound::compute_tensor : Bound::compute_fp;
  if (c.known()) {
    const double memory_s = in.dram_bytes / c.dram_bytes_per_s;
    const double compute_s = in.fp_flops / c.fp32_flops_per_s + tensor_flops / c.tensor_flops_per_s;
    v.attainable_ns = std::max(memory_s, compute_s) * 1e9;
    v.saving_ns = std::max(0.0, in.device_ns - v.attainable_ns);
  }
  return v;
}

}  // namespace pasta::detail
