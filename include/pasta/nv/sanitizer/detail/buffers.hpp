// The buffers an instrumented launch's patches write (nv::Sanitizer): the
// allocation table, regions, counters and trace buffer brought up to date
// before the launch, and what they hold read back after it (histogram bins,
// per-instruction counts, records).
#pragma once

#include <cuda.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <span>
#include <vector>

#include <pasta/core/access_regions.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/names.hpp>
#include <pasta/nv/sanitizer/detail/api.hpp>
#include <pasta/nv/sanitizer/detail/device.hpp>

namespace pasta::nv::detail {

// The launch this thread is inside, from BEGIN to END.
struct LaunchState {
  std::uint64_t correlation = 0;
  NameId name{};
  std::uint32_t device = 0;
  Dim3 grid{}, block{};
  ContextState* ctx = nullptr;  // set when instrumented
  bool in_window = true;        // launched inside the capture window: reported
};

class AccessBuffers {
 public:
  AccessBuffers(SanitizerStats& stats, int page_shift) : stats_(stats), page_shift_(page_shift) {}
  AccessBuffers(const AccessBuffers&) = delete;
  AccessBuffers& operator=(const AccessBuffers&) = delete;

  int page_shift() const { return page_shift_; }
  // The program's live allocations, which the table the patches read lists.
  void allocated(std::uint64_t base, std::uint64_t bytes) {
    std::lock_guard lock(table_mutex_);
    live_[base] = bytes;
    ++table_version_;
  }
  void freed(std::uint64_t base) {
    std::lock_guard lock(table_mutex_);
    live_.erase(base);
    ++table_version_;
  }
  // What per-instruction counts tell apart in the launch `correlation`:
  // every live allocation, and what the sink's tools tell apart (its
  // KernelLaunch is in their state by now). Built; nv::Sanitizer's
  // launch_mutex_ held (the one instrumented launch owns it).
  template <class Sink>
  const AccessRegions& regions_for(Sink& sink, std::uint64_t correlation) {
    regions_.clear();
    {
      std::lock_guard lock(table_mutex_);
      for (const auto& [base, bytes] : live_) regions_.range(base, bytes);
    }
    if constexpr (requires { sink.access_regions(correlation, regions_); })
      sink.access_regions(correlation, regions_);
    regions_.build();
    return regions_;
  }

  // False: the launch is not instrumented (its callback data is null).
  // `regions` (built) for per-instruction counts.
  bool prepare(ContextState& c, const Sanitizer_LaunchData& d, AccessMode mode,
               std::uint64_t trace_buffer_bytes, const AccessRegions* regions = nullptr);
  template <class Sink>
  void collect_histogram(Sink& sink, const Sanitizer_LaunchData& d, const LaunchState& l);
  template <class Sink>
  void collect_pcs(Sink& sink, const Sanitizer_LaunchData& d, const LaunchState& l,
                   std::uint64_t trace_buffer_bytes);
  template <class Sink>
  void collect_trace(Sink& sink, const Sanitizer_LaunchData& d, const LaunchState& l);

 private:
  SanitizerStats& stats_;
  const int page_shift_;
  std::mutex table_mutex_;                       // guards live_, table_version_
  std::map<std::uint64_t, std::uint64_t> live_;  // base -> bytes of each live allocation
  std::uint64_t table_version_ = 0;
  // prepare()'s parts: the allocation table on the device up to date; the
  // counters and the buffers the launch's mode writes, cleared, in `p`.
  void update_table(ContextState& c, Sanitizer_StreamHandle stream);
  void prepare_counts(ContextState& c, Sanitizer_StreamHandle stream, AccessMode mode,
                      std::uint64_t trace_buffer_bytes, device::Params& p);
  void prepare_pcs(ContextState& c, const Sanitizer_LaunchData& d, device::Params& p,
                   const AccessRegions& regions, std::uint64_t trace_buffer_bytes);
  // Slots of the largest count table PASTA_TRACE_BUFFER's bytes allow (a power of two).
  static std::uint64_t pc_max_slots(std::uint64_t trace_buffer_bytes);

  std::vector<device::TraceRecord> host_records_;
  AccessRegions regions_;
};

// The per-instruction count table's first size, in slots (32 MiB, or
// PASTA_TRACE_BUFFER's bytes if fewer); it grows fourfold after a launch
// that filled half of it or overflowed, up to PASTA_TRACE_BUFFER's bytes.
inline constexpr std::uint64_t pc_initial_slots = 1ull << 20;

// A launch's regions as one block of device memory: the arrays of
// region::Table, each 16-byte aligned, and their offsets.
struct RegionBlock {
  std::vector<std::byte> bytes;
  std::size_t bounds = 0, checks = 0, check_views = 0, views = 0, dims = 0;

  explicit RegionBlock(const AccessRegions& r) {
    auto put = [&](const auto& span) {
      const std::size_t at = (bytes.size() + 15) & ~std::size_t{15};
      const std::size_t n = span.size_bytes();
      bytes.resize(at + n);
      if (n) std::memcpy(bytes.data() + at, span.data(), n);
      return at;
    };
    bounds = put(r.bounds());
    checks = put(r.checks());
    check_views = put(r.check_views());
    views = put(r.views());
    dims = put(r.dims());
  }
  // The table the device reads, at `device` (the block's copy there).
  pasta::detail::region::Table table(const AccessRegions& r, std::byte* device) const {
    using namespace pasta::detail::region;
    return {reinterpret_cast<const std::uint64_t*>(device + bounds),
            static_cast<std::uint32_t>(r.bounds().size()),
            static_cast<std::uint32_t>(r.views().size()),
            reinterpret_cast<const Checks*>(device + checks),
            reinterpret_cast<const std::uint32_t*>(device + check_views),
            reinterpret_cast<const View*>(device + views),
            reinterpret_cast<const Dim*>(device + dims)};
  }
};

// Brings the context's table, counters and parameters up to date for one
// launch and points the launch's callback data at them. nv::Sanitizer's
// launch_mutex_ held.
inline bool AccessBuffers::prepare(ContextState& c, const Sanitizer_LaunchData& d, AccessMode mode,
                                   std::uint64_t trace_buffer_bytes, const AccessRegions* regions) {
  const CUcontext ctx = c.ctx;
  update_table(c, d.hStream);
  device::Params p{};
  p.ranges = c.ranges.get<const device::AllocRange>();
  p.range_count = static_cast<std::uint32_t>(c.host_ranges.size());
  p.page_shift = static_cast<std::uint32_t>(page_shift_);
  prepare_counts(c, d.hStream, mode, trace_buffer_bytes, p);
  std::uint64_t pc = 0, size = 0;
  const bool located =
      d.functionName && sanitizer_api().sanitizerGetFunctionPcAndSize(d.module, d.functionName, &pc,
                                                                      &size) == SANITIZER_SUCCESS;
  if (located) p.function_pc = pc;
  if (mode == AccessMode::pcs) {
    using pasta::detail::region::max_pc_offset;
    using pasta::detail::region::max_regions;
    // Counts are keyed by the pc offset within the function: without its start, or past
    // what a key holds, the launch runs uninstrumented and is counted.
    if (!located || !regions || size > max_pc_offset || regions->regions() > max_regions) {
      stats_.pc_too_large.fetch_add(1, std::memory_order_relaxed);
      check(
          sanitizer_api().sanitizerSetLaunchCallbackData(d.hLaunch, d.function, d.hStream, nullptr),
          "clearing the launch's callback data");
      return false;
    }
    prepare_pcs(c, d, p, *regions, trace_buffer_bytes);
  }
  c.params.reserve(ctx, sizeof(device::Params), "launch parameters");
  check(sanitizer_api().sanitizerMemcpyHostToDeviceAsync(c.params.get(), &p, sizeof(p), d.hStream),
        "copying launch parameters");
  check(sanitizer_api().sanitizerSetLaunchCallbackData(d.hLaunch, d.function, d.hStream,
                                                       c.params.get()),
        "setting the launch's callback data");
  return true;
}

inline void AccessBuffers::update_table(ContextState& c, Sanitizer_StreamHandle stream) {
  using device::AllocRange;
  // Only the snapshot is taken under table_mutex_: a driver call made while
  // holding it can run a stream-ordered allocation's callback on this very
  // thread, which takes table_mutex_ again (seen as a hang on the H100).
  {
    std::lock_guard lock(table_mutex_);
    if (c.table_version == table_version_) return;
    c.host_ranges.clear();
    std::uint64_t slot = 0;
    for (const auto& [base, bytes] : live_) {
      c.host_ranges.push_back(AllocRange{base, base + bytes, slot});
      slot += (bytes + (1ull << page_shift_) - 1) >> page_shift_;
    }
    c.slot_count = slot + device::catch_all_slots;
    c.table_version = table_version_;
  }
  try {
    c.ranges.reserve(c.ctx, c.host_ranges.size() * sizeof(AllocRange), "the allocation table");
    if (!c.host_ranges.empty())
      check(sanitizer_api().sanitizerMemcpyHostToDeviceAsync(
                c.ranges.get(), c.host_ranges.data(), c.host_ranges.size() * sizeof(AllocRange),
                stream),
            "copying the allocation table");
  } catch (...) {
    c.table_version = ~0ull;  // the device does not hold it
    throw;
  }
}

inline void AccessBuffers::prepare_counts(ContextState& c, Sanitizer_StreamHandle stream,
                                          AccessMode mode, std::uint64_t trace_buffer_bytes,
                                          device::Params& p) {
  const CUcontext ctx = c.ctx;
  if (c.counters.reserve(ctx, 2 * sizeof(unsigned long long), "counters"))
    check(sanitizer_api().sanitizerMemset(c.counters.get(), 0, c.counters.bytes(), stream),
          "clearing counters");
  if (mode == AccessMode::histogram) {
    const std::size_t bytes = c.slot_count * sizeof(device::Slot);
    if (c.slots.reserve(ctx, bytes, "page counters"))
      check(sanitizer_api().sanitizerMemset(c.slots.get(), 0, c.slots.bytes(), stream),
            "clearing page counters");
    c.bins.reserve(ctx, c.slot_count * sizeof(device::Bin), "compacted counters");
    p.slots = c.slots.get<device::Slot>();
    p.slot_count = c.slot_count;
  }
  if (mode == AccessMode::trace) {
    c.records.reserve(ctx, trace_buffer_bytes, "the access trace buffer");
    p.records = c.records.get<device::TraceRecord>();
    p.capacity = c.records.bytes() / sizeof(device::TraceRecord);
    p.record_count = c.counters.get<unsigned long long>();
  }
}

// The regions (copied when they changed), the count table and its
// overflow records, cleared: the post-pass clears what it reads back.
inline void AccessBuffers::prepare_pcs(ContextState& c, const Sanitizer_LaunchData& d,
                                       device::Params& p, const AccessRegions& regions,
                                       std::uint64_t trace_buffer_bytes) {
  const CUcontext ctx = c.ctx;
  const RegionBlock block(regions);
  stats_.pc_overfull_regions.fetch_add(regions.overfull(), std::memory_order_relaxed);
  for (std::uint64_t seen = stats_.pc_regions.load();
       regions.regions() > seen &&
       !stats_.pc_regions.compare_exchange_weak(seen, regions.regions());) {
  }
  if (c.regions.reserve(ctx, block.bytes.size(), "the launch's regions") ||
      c.region_bytes != block.bytes) {
    // Copied from what the context keeps, which outlives the copy.
    c.region_bytes = block.bytes;
    try {
      check(sanitizer_api().sanitizerMemcpyHostToDeviceAsync(c.regions.get(), c.region_bytes.data(),
                                                             c.region_bytes.size(), d.hStream),
            "copying the launch's regions");
    } catch (...) {
      c.region_bytes.clear();  // the device does not hold them
      throw;
    }
  }
  p.regions = block.table(regions, c.regions.get<std::byte>());
  if (!c.pc_slots) c.pc_slots = pc_initial_slots;
  c.pc_slots = std::min(c.pc_slots, pc_max_slots(trace_buffer_bytes));
  c.pc_overflow_slots = c.pc_slots / 4;
  const std::uint64_t slot_bytes = sizeof(device::PcCount);
  if (c.pc_table.reserve(ctx, c.pc_slots * slot_bytes, "the per-instruction count table"))
    check(sanitizer_api().sanitizerMemset(c.pc_table.get(), 0, c.pc_table.bytes(), d.hStream),
          "clearing the per-instruction count table");
  if (c.pc_overflow.reserve(ctx, c.pc_overflow_slots * slot_bytes, "overflow records"))
    check(sanitizer_api().sanitizerMemset(c.pc_overflow.get(), 0, c.pc_overflow.bytes(), d.hStream),
          "clearing the overflow records");
  c.pc_out.reserve(ctx, (c.pc_slots + c.pc_overflow_slots) * slot_bytes,
                   "per-instruction counts for the host");
  p.table = c.pc_table.get<device::PcCount>();
  p.table_mask = c.pc_slots - 1;
  p.overflow = c.pc_overflow.get<device::PcCount>();
  p.overflow_capacity = c.pc_overflow_slots;
  p.overflow_count = c.counters.get<unsigned long long>();
  p.max_probes = device::pc_max_probes;
}

// The post-pass around `launches(driver)`: in the launch's context, as
// pasta's own work (its callbacks ignored), waited for before it returns.
template <class F>
void run_post_pass(ContextState& c, const Sanitizer_LaunchData& d, F&& launches) {
  in_context(c.ctx, "entering the launch's context", [&](const Driver& driver) {
    launches(driver);
    check(sanitizer_api().sanitizerStreamSynchronize(d.hStream), "waiting for the post-pass");
  });
}

// One compaction kernel (kernels/compact.cu) over n items into `out`.
inline void launch_compaction(const Driver& driver, CUfunction kernel, void* items, std::uint64_t n,
                              void* out, unsigned long long* out_count, CUstream stream) {
  void* args[] = {&items, &n, &out, &out_count};
  const std::uint64_t tiles = (n + device::compact_block - 1) / device::compact_block;
  const unsigned grid = static_cast<unsigned>(std::min<std::uint64_t>(tiles, 1024));
  check(driver.launch(kernel, grid, 1, 1, device::compact_block, 1, 1, 0, stream, args, nullptr),
        "launching the post-pass");
}

// The count the compaction made, to pinned host memory, cleared for the next launch.
inline void launch_publish(const Driver& driver, CUfunction publish, unsigned long long* count,
                           void* to, CUstream stream) {
  void* args[] = {&count, &to};
  check(driver.launch(publish, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr),
        "launching the post-pass's count copy");
}

// After the kernel: the post-pass compacts the non-empty counters on the
// device (and clears them), then only those travel to the host.
template <class Sink>
void AccessBuffers::collect_histogram(Sink& sink, const Sanitizer_LaunchData& d,
                                      const LaunchState& l) {
  ContextState& c = *l.ctx;
  unsigned long long* out_count = c.counters.get<unsigned long long>() + 1;
  run_post_pass(c, d, [&](const Driver& driver) {
    // Loaded at context creation or with the first patched module: here,
    // inside the launch, loading it can wait forever (see above).
    if (!c.compact) throw DeviceError{"pasta's post-pass kernel is not loaded"};
    c.host_count.reserve(c.ctx, sizeof(unsigned long long), "the count of non-empty pages");
    launch_compaction(driver, c.compact, c.slots.get(), c.slot_count, c.bins.get(), out_count,
                      d.stream);
    launch_publish(driver, c.publish, out_count, c.host_count.get(), d.stream);
  });
  // The bins and their count are in pinned host memory, written by the
  // post-pass: no copy call here (a Sanitizer copy after a launch made inside
  // a launch callback waited forever on a driver lock, on the H100, when the
  // program's launch was on a stream of its own).
  const unsigned long long count = *c.host_count.get<volatile unsigned long long>();
  if (count > c.slot_count) throw DeviceError{"the post-pass returned a corrupt count"};
  const std::span<const device::Bin> host_bins(c.bins.get<const device::Bin>(), count);
  stats_.bins.fetch_add(count, std::memory_order_relaxed);
  stats_.copy_bytes.fetch_add(count * sizeof(device::Bin) + sizeof(count),
                              std::memory_order_relaxed);
  if constexpr (Sink::template wants<AccessHistogram>()) {
    const std::uint64_t page = 1ull << page_shift_;
    const std::uint64_t catch_all = c.slot_count - device::catch_all_slots;
    sink.batch([&](auto& s) {
      for (const device::Bin& b : host_bins) {
        AccessHistogram h{.correlation = l.correlation,
                          .device = l.device,
                          .bin_bytes = static_cast<std::uint32_t>(page),
                          .reads = b.counts.reads,
                          .writes = b.counts.writes,
                          .read_bytes = b.counts.read_bytes,
                          .write_bytes = b.counts.write_bytes};
        if (b.slot < catch_all) {
          // The range whose slots hold this one: the last with first_slot <= slot.
          auto it = std::upper_bound(
              c.host_ranges.begin(), c.host_ranges.end(), b.slot,
              [](std::uint64_t v, const device::AllocRange& r) { return v < r.first_slot; });
          const device::AllocRange& r = *(it - 1);
          h.alloc_base = r.base;
          h.address = r.base + ((b.slot - r.first_slot) << page_shift_);
        }
        s.emit(h);
      }
    });
  }
}

inline std::uint64_t AccessBuffers::pc_max_slots(std::uint64_t trace_buffer_bytes) {
  const std::uint64_t slots = trace_buffer_bytes / sizeof(device::PcCount);
  return std::bit_floor(std::max<std::uint64_t>(slots, 4096));
}

// After the kernel: the post-pass compacts the table's claimed slots and
// the overflow records (and clears both); the host merges nothing, each
// count becomes a PcAccessCount. A launch that filled half the table or
// overflowed it makes the table four times larger for the next one.
template <class Sink>
void AccessBuffers::collect_pcs(Sink& sink, const Sanitizer_LaunchData& d, const LaunchState& l,
                                std::uint64_t trace_buffer_bytes) {
  ContextState& c = *l.ctx;
  unsigned long long* overflow_count = c.counters.get<unsigned long long>();
  unsigned long long* out_count = overflow_count + 1;
  run_post_pass(c, d, [&](const Driver& driver) {
    if (!c.compact_pcs) throw DeviceError{"pasta's post-pass kernel is not loaded"};
    c.host_count.reserve(c.ctx, 2 * sizeof(unsigned long long), "the counts' numbers");
    auto* host = c.host_count.get<unsigned long long>();
    launch_compaction(driver, c.compact_pcs, c.pc_table.get(), c.pc_slots, c.pc_out.get(),
                      out_count, d.stream);
    launch_compaction(driver, c.compact_pcs, c.pc_overflow.get(), c.pc_overflow_slots,
                      c.pc_out.get(), out_count, d.stream);
    launch_publish(driver, c.publish, out_count, host, d.stream);
    launch_publish(driver, c.publish, overflow_count, host + 1, d.stream);
  });
  const volatile unsigned long long* host = c.host_count.get<volatile unsigned long long>();
  const unsigned long long count = host[0], overflowed = host[1];
  if (count > c.pc_slots + c.pc_overflow_slots)
    throw DeviceError{"the post-pass returned a corrupt count"};
  stats_.pc_counts.fetch_add(count, std::memory_order_relaxed);
  stats_.copy_bytes.fetch_add(count * sizeof(device::PcCount) + 2 * sizeof(count),
                              std::memory_order_relaxed);
  const std::uint64_t kept = std::min<std::uint64_t>(overflowed, c.pc_overflow_slots);
  stats_.pc_overflow.fetch_add(kept, std::memory_order_relaxed);
  if (overflowed > kept) {
    stats_.pc_lost.fetch_add(overflowed - kept, std::memory_order_relaxed);
    stats_.pc_lost_launches.fetch_add(1, std::memory_order_relaxed);
  }
  if ((overflowed || 2 * (count - kept) > c.pc_slots) &&
      c.pc_slots < pc_max_slots(trace_buffer_bytes)) {
    c.pc_slots *= 4;  // reallocated (and cleared) at the next launch
    stats_.pc_table_growths.fetch_add(1, std::memory_order_relaxed);
  }
  // Read in place (pinned memory the post-pass wrote); launch_mutex_ keeps
  // the next launch's post-pass away until the tools are done.
  const std::span<const device::PcCount> counts(c.pc_out.get<const device::PcCount>(), count);
  if constexpr (Sink::template wants<PcAccessCount>()) {
    namespace region = pasta::detail::region;
    sink.batch([&](auto& s) {
      for (const device::PcCount& x : counts)
        s.emit(PcAccessCount{.correlation = l.correlation,
                             .address = x.address,
                             .pc = region::pc_of(x.key),
                             .count = x.count,
                             .bytes = x.count * x.bytes,
                             .device = l.device,
                             .flags = static_cast<std::uint8_t>(x.flags),
                             .space = static_cast<MemSpace>(region::space_of(x.key))});
    });
  }
}

// After the kernel: every record goes to the host, which does the rest.
template <class Sink>
void AccessBuffers::collect_trace(Sink& sink, const Sanitizer_LaunchData& d, const LaunchState& l) {
  ContextState& c = *l.ctx;
  auto* counter = c.counters.get<unsigned long long>();
  unsigned long long written = 0;
  check(sanitizer_api().sanitizerStreamSynchronize(d.hStream), "waiting for the kernel");
  check(sanitizer_api().sanitizerMemcpyDeviceToHost(&written, counter, sizeof(written), d.hStream),
        "reading the number of access records");
  const std::uint64_t capacity = c.records.bytes() / sizeof(device::TraceRecord);
  const std::uint64_t n = std::min<std::uint64_t>(written, capacity);
  if (written > capacity) {
    stats_.records_lost.fetch_add(written - capacity, std::memory_order_relaxed);
    stats_.overflowed_launches.fetch_add(1, std::memory_order_relaxed);
  }
  stats_.records.fetch_add(n, std::memory_order_relaxed);
  constexpr std::uint64_t chunk = (64ull << 20) / sizeof(device::TraceRecord);
  for (std::uint64_t first = 0; first < n; first += chunk) {
    const std::uint64_t m = std::min(chunk, n - first);
    host_records_.resize(m);
    check(sanitizer_api().sanitizerMemcpyDeviceToHost(host_records_.data(),
                                                      c.records.get<device::TraceRecord>() + first,
                                                      m * sizeof(device::TraceRecord), d.hStream),
          "copying access records");
    stats_.copy_bytes.fetch_add(m * sizeof(device::TraceRecord), std::memory_order_relaxed);
    if constexpr (Sink::template wants<MemAccess>()) {
      sink.batch([&](auto& s) {
        for (const device::TraceRecord& r : host_records_)
          s.emit(MemAccess{.correlation = l.correlation,
                           .address = r.address,
                           .pc = r.pc,
                           .device = l.device,
                           .bytes = r.bytes,
                           .flags = r.flags,
                           .space = static_cast<MemSpace>(r.space)});
      });
    }
  }
  check(sanitizer_api().sanitizerMemset(counter, 0, sizeof(written), d.hStream),
        "clearing the record count");
}

}  // namespace pasta::nv::detail
