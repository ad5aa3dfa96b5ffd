// TensorAlloc::report: its tables; inline in header-only builds, compiled once
// otherwise (core/detail/api.hpp).
#pragma once

#include <pasta/tools/tensor_alloc.hpp>

namespace pasta::tools {

PASTA_FUNC void TensorAlloc::report(Report& out) const {
  const double mib = 1.0 / (1024 * 1024), ms = 1e-6;
  std::vector<const Device*> devices;
  std::uint64_t allocations = 0, frees = 0, live_tensors = 0, live_bytes = 0;
  for (const Device& d : devices_) {
    devices.push_back(&d);
    allocations += d.allocations;
    frees += d.frees;
    live_tensors += d.live_tensors;
    live_bytes += d.live_bytes;
  }
  std::sort(devices.begin(), devices.end(),
            [](const Device* a, const Device* b) { return a->device < b->device; });
  out.summary("allocations", allocations);
  out.summary("frees", frees);
  out.summary("frees of memory allocated before profiling", unknown_frees_);
  out.summary("allocations over live tensors (free missed)", replaced_);
  out.summary("tensors live at the end", live_tensors);
  out.summary("bytes live at the end", live_bytes);

  auto& dev = out.table("devices", "Live tensor memory per device",
                        {"device", "peak_live_mb", "peak_at_ms", "op_at_peak", "allocator_peak_mb",
                         "allocations", "frees", "live_at_end_mb"});
  dev.precision(2, 3);
  for (const Device* d : devices)
    dev.row(device_cell(d->device), d->peak_bytes * mib, since_origin(d->peak_ns) * ms,
            label(d->peak_op), d->allocator_peak * mib, d->allocations, d->frees,
            d->live_bytes * mib);

  auto& sizes =
      out.table("sizes", "Allocations by size", {"up_to", "up_to_bytes", "allocations", "bytes"});
  for (std::size_t i = 0; i < size_buckets; ++i)
    if (sizes_[i].count)
      sizes.row(size_text(i), std::uint64_t{512} << i, sizes_[i].count, sizes_[i].bytes);

  auto& lifetimes = out.table("lifetimes", "Tensor lifetimes (allocation to free)",
                              {"lifetime", "frees", "bytes"});
  static constexpr std::string_view decades[lifetime_buckets] = {
      "< 10 us", "< 100 us", "< 1 ms", "< 10 ms", "< 100 ms", "< 1 s", ">= 1 s"};
  for (std::size_t i = 0; i < lifetime_buckets; ++i)
    lifetimes.row(std::string(decades[i]), lifetimes_[i].count, lifetimes_[i].bytes);

  std::vector<std::uint32_t> ops;
  for (std::uint32_t i = 0; i < by_op_.size(); ++i)
    if (by_op_[i].count) ops.push_back(i);
  std::sort(ops.begin(), ops.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (by_op_[a].bytes != by_op_[b].bytes) return by_op_[a].bytes > by_op_[b].bytes;
    if (by_op_[a].count != by_op_[b].count) return by_op_[a].count > by_op_[b].count;
    return label(NameId{a}) < label(NameId{b});
  });
  auto& by_op = out.table("operators", "Allocations per operator", {"op", "allocations", "bytes"});
  for (std::uint32_t i : ops) by_op.row(label(NameId{i}), by_op_[i].count, by_op_[i].bytes);

  auto& over_time =
      out.table("timeline", "Live tensor memory over time", {"time_ms", "device", "live_mb"});
  over_time.precision(0, 3);
  for (const Device* d : devices)
    for (const Point& p : timeline(d->device))
      over_time.row(since_origin(p.time_ns) * ms, device_cell(d->device), p.live_bytes * mib);
}

}  // namespace pasta::tools
