// TensorAlloc's event handlers and report (its tables): inline in header-only
// builds; in a compiled build (core/detail/api.hpp) compiled once, in the
// runtime, so a unit that includes the header parses none of it.
#pragma once

#include <pasta/tools/tensor_alloc.hpp>

namespace pasta::tools {

PASTA_FUNC void TensorAlloc::report(Report& out) const {
  out.page(80)
      .nothing("no tensors recorded: run a PyTorch program with --torch", "allocations")
      .tables({"devices", "lines", "operators", "sizes", "lifetimes", "timeline"});
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
                         "allocations", "frees", "live_at_end_mb", "line_at_peak"});
  dev.precision(2, 3);
  for (const Device* d : devices)
    dev.row(device_cell(d->device), d->peak_bytes * mib, since_origin(d->peak_ns) * ms,
            label(d->peak_op), d->allocator_peak * mib, d->allocations, d->frees,
            d->live_bytes * mib, d->peak_source ? std::string(name_of(d->peak_source)) : "");

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

  // The tensors' lines: where the program made the memory (with --torch in Python 3.12+).
  std::vector<std::pair<NameId, Bucket>> lines(by_line_.begin(), by_line_.end());
  std::sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) {
    if (a.second.bytes != b.second.bytes) return a.second.bytes > b.second.bytes;
    return name_of(a.first) < name_of(b.first);
  });
  auto& by_line = out.table("lines", "Allocations per line of the program (the line that called "
                                     "the allocating operator)",
                            {"source", "allocations", "bytes"});
  for (const auto& [source, b] : lines) by_line.row(std::string(name_of(source)), b.count, b.bytes);

  auto& over_time =
      out.table("timeline", "Live tensor memory over time", {"time_ms", "device", "live_mb"});
  over_time.precision(0, 3);
  for (const Device* d : devices)
    for (const Point& p : timeline(d->device))
      over_time.row(since_origin(p.time_ns) * ms, device_cell(d->device), p.live_bytes * mib);
}

PASTA_FUNC void TensorAlloc::on(const OpBegin& e) {
  origin(e.time_ns);
  ops_.on(e);
}

PASTA_FUNC void TensorAlloc::on(const pasta::TensorAlloc& e) {
  origin(e.time_ns);
  const NameId op = ops_.name(e.thread, e.op);
  const NameId source = ops_.source(e.thread, e.op);
  // Overlapped tensors' frees were missed: they are no longer live.
  replaced_ += live_.insert({e.address, e.bytes, e.time_ns, e.device}, [&](const Live& old) {
    Device& od = device(old.device);
    od.live_bytes -= old.bytes;
    --od.live_tensors;
  });
  Device& dev = device(e.device);
  dev.live_bytes += e.bytes;
  ++dev.live_tensors;
  ++dev.allocations;
  dev.allocator_peak = std::max(dev.allocator_peak, e.total_allocated);
  if (dev.live_bytes > dev.peak_bytes) {
    dev.peak_bytes = dev.live_bytes;
    dev.peak_ns = e.time_ns;
    dev.peak_op = op;
    dev.peak_source = source;
  }
  Bucket& size = sizes_[size_bucket(e.bytes)];
  ++size.count;
  size.bytes += e.bytes;
  Bucket& by_op = at(op);
  ++by_op.count;
  by_op.bytes += e.bytes;
  if (source) {
    Bucket& line = by_line_[source];
    ++line.count;
    line.bytes += e.bytes;
  }
  record(dev, e.time_ns);
}

PASTA_FUNC void TensorAlloc::on(const TensorFree& e) {
  origin(e.time_ns);
  const auto live = live_.erase(e.address);
  if (!live) {
    ++unknown_frees_;  // allocated before profiling began
    return;
  }
  Device& d = device(live->device);
  d.live_bytes -= live->bytes;
  --d.live_tensors;
  ++d.frees;
  const std::uint64_t age = e.time_ns >= live->time_ns ? e.time_ns - live->time_ns : 0;
  Bucket& b = lifetimes_[lifetime_bucket(age)];
  ++b.count;
  b.bytes += live->bytes;
  record(d, e.time_ns);
}

PASTA_FUNC auto TensorAlloc::device_stats(std::uint32_t device) const -> const Device* {
  for (const Device& d : devices_)
    if (d.device == device) return &d;
  return nullptr;
}

PASTA_FUNC auto TensorAlloc::timeline(std::uint32_t device) const -> std::vector<Point> {
  const Device* d = device_stats(device);
  if (!d) return {};
  std::vector<Point> points = d->timeline;
  if (d->pending_n) points.push_back(d->pending);
  return points;
}

PASTA_FUNC auto TensorAlloc::op_stats(std::string_view op) const -> Bucket {
  for (std::size_t i = 0; i < by_op_.size(); ++i)
    if (by_op_[i].count && label(NameId{static_cast<std::uint32_t>(i)}) == op) return by_op_[i];
  return {};
}

PASTA_FUNC std::size_t TensorAlloc::size_bucket(std::uint64_t bytes) {
  if (bytes <= 512) return 0;
  return std::min<std::size_t>(std::bit_width(bytes - 1) - 9, size_buckets - 1);
}

PASTA_FUNC std::size_t TensorAlloc::lifetime_bucket(std::uint64_t ns) {
  std::size_t i = 0;
  for (std::uint64_t limit = 10'000; i + 1 < lifetime_buckets && ns >= limit; limit *= 10) ++i;
  return i;
}

PASTA_FUNC std::string TensorAlloc::size_text(std::size_t bucket) {
  static constexpr std::string_view units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const std::size_t bits = bucket + 9;  // 2^bits bytes
  return fmt::format("<= {} {}", std::uint64_t{1} << (bits % 10), units[bits / 10]);
}

PASTA_FUNC auto TensorAlloc::device(std::uint32_t id) -> Device& {
  for (Device& d : devices_)
    if (d.device == id) return d;
  Device& d = devices_.emplace_back();
  d.device = id;
  d.timeline.reserve(timeline_points);
  return d;
}

PASTA_FUNC auto TensorAlloc::at(NameId op) -> Bucket& {
  if (op.value >= by_op_.size()) by_op_.resize(op.value + 1);
  return by_op_[op.value];
}

PASTA_FUNC void TensorAlloc::record(Device& d, std::uint64_t time_ns) {
  const Point p{time_ns, d.live_bytes};
  if (d.pending_n == 0 || p.live_bytes > d.pending.live_bytes) d.pending = p;
  if (++d.pending_n < d.stride) return;
  d.timeline.push_back(d.pending);
  d.pending_n = 0;
  if (d.timeline.size() < timeline_points) return;
  for (std::size_t i = 0; i < timeline_points / 2; ++i) {
    const Point &a = d.timeline[2 * i], &b = d.timeline[2 * i + 1];
    d.timeline[i] = b.live_bytes > a.live_bytes ? b : a;
  }
  d.timeline.resize(timeline_points / 2);
  d.stride *= 2;
}

}  // namespace pasta::tools
