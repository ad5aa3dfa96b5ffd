// The buffers an instrumented launch's patches write (nv::Sanitizer): the
// allocation table, counters and trace buffer brought up to date before the
// launch, and what they hold read back after it (histogram bins, records).
#pragma once

#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <vector>

#include <pasta/core/events.hpp>
#include <pasta/core/names.hpp>
#include <pasta/nv/detail/sanitizer_api.hpp>
#include <pasta/nv/detail/sanitizer_device.hpp>

namespace pasta::nv::detail {

// The launch this thread is inside, from BEGIN to END.
struct LaunchState {
  std::uint64_t correlation = 0;
  NameId name{};
  std::uint32_t device = 0;
  Dim3 grid{}, block{};
  ContextState* ctx = nullptr;  // set when instrumented
  bool in_window = true;         // launched inside the capture window: reported
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

  void prepare(ContextState& c, const Sanitizer_LaunchData& d, AccessMode mode,
               std::uint64_t trace_buffer_bytes);
  template <class Sink>
  void collect_histogram(Sink& sink, const Sanitizer_LaunchData& d, const LaunchState& l);
  template <class Sink>
  void collect_trace(Sink& sink, const Sanitizer_LaunchData& d, const LaunchState& l);

 private:
  SanitizerStats& stats_;
  const int page_shift_;
  std::mutex table_mutex_;                       // guards live_, table_version_
  std::map<std::uint64_t, std::uint64_t> live_;  // base -> bytes of each live allocation
  std::uint64_t table_version_ = 0;
  std::vector<device::TraceRecord> host_records_;
};

// Brings the context's table, counters and parameters up to date for one
// launch and points the launch's callback data at them. nv::Sanitizer's
// launch_mutex_ held.
inline void AccessBuffers::prepare(ContextState& c, const Sanitizer_LaunchData& d, AccessMode mode,
                                   std::uint64_t trace_buffer_bytes) {
  using device::AllocRange;
  const CUcontext ctx = c.ctx;
  // Only the snapshot is taken under table_mutex_: a driver call made while
  // holding it can run a stream-ordered allocation's callback on this very
  // thread, which takes table_mutex_ again (seen as a hang on the H100).
  bool changed = false;
  {
    std::lock_guard lock(table_mutex_);
    if (c.table_version != table_version_) {
      changed = true;
      c.host_ranges.clear();
      std::uint64_t slot = 0;
      for (const auto& [base, bytes] : live_) {
        c.host_ranges.push_back(AllocRange{base, base + bytes, slot});
        slot += (bytes + (1ull << page_shift_) - 1) >> page_shift_;
      }
      c.slot_count = slot + device::catch_all_slots;
      c.table_version = table_version_;
    }
  }
  if (changed) {
    try {
      c.ranges.reserve(ctx, c.host_ranges.size() * sizeof(AllocRange), "the allocation table");
      if (!c.host_ranges.empty())
        check(sanitizer_api().sanitizerMemcpyHostToDeviceAsync(
                  c.ranges.get(), c.host_ranges.data(), c.host_ranges.size() * sizeof(AllocRange),
                  d.hStream),
              "copying the allocation table");
    } catch (...) {
      c.table_version = ~0ull;  // the device does not hold it
      throw;
    }
  }
  device::Params p{};
  p.ranges = c.ranges.get<const AllocRange>();
  p.range_count = static_cast<std::uint32_t>(c.host_ranges.size());
  p.page_shift = static_cast<std::uint32_t>(page_shift_);
  if (mode == AccessMode::histogram) {
    const std::size_t bytes = c.slot_count * sizeof(device::Slot);
    if (c.slots.reserve(ctx, bytes, "page counters"))
      check(sanitizer_api().sanitizerMemset(c.slots.get(), 0, c.slots.bytes(), d.hStream),
            "clearing page counters");
    c.bins.reserve(ctx, c.slot_count * sizeof(device::Bin), "compacted counters");
    p.slots = c.slots.get<device::Slot>();
    p.slot_count = c.slot_count;
  }
  if (c.counters.reserve(ctx, 2 * sizeof(unsigned long long), "counters"))
    check(sanitizer_api().sanitizerMemset(c.counters.get(), 0, c.counters.bytes(), d.hStream),
          "clearing counters");
  if (mode == AccessMode::trace) {
    c.records.reserve(ctx, trace_buffer_bytes, "the access trace buffer");
    p.records = c.records.get<device::TraceRecord>();
    p.capacity = c.records.bytes() / sizeof(device::TraceRecord);
    p.record_count = c.counters.get<unsigned long long>();
  }
  std::uint64_t pc = 0, size = 0;
  if (d.functionName && sanitizer_api().sanitizerGetFunctionPcAndSize(d.module, d.functionName, &pc,
                                                                      &size) == SANITIZER_SUCCESS)
    p.function_pc = pc;
  c.params.reserve(ctx, sizeof(device::Params), "launch parameters");
  check(sanitizer_api().sanitizerMemcpyHostToDeviceAsync(c.params.get(), &p, sizeof(p), d.hStream),
        "copying launch parameters");
  check(sanitizer_api().sanitizerSetLaunchCallbackData(d.hLaunch, d.function, d.hStream,
                                                       c.params.get()),
        "setting the launch's callback data");
}

// After the kernel: the post-pass compacts the non-empty counters on the
// device (and clears them), then only those travel to the host.
template <class Sink>
void AccessBuffers::collect_histogram(Sink& sink, const Sanitizer_LaunchData& d,
                                      const LaunchState& l) {
  ContextState& c = *l.ctx;
  unsigned long long* out_count = c.counters.get<unsigned long long>() + 1;
  {
    OwnWork own;
    const Driver& driver = loaded_driver();
    CUcontext previous = nullptr;
    check(driver.push(c.ctx), "entering the launch's context");
    try {
      // Loaded at context creation or with the first patched module: here,
      // inside the launch, loading it can wait forever (see above).
      if (!c.compact) throw DeviceError{"pasta's post-pass kernel is not loaded"};
      c.host_count.reserve(c.ctx, sizeof(unsigned long long), "the count of non-empty pages");
      void* slots = c.slots.get();
      void* bins = c.bins.get();
      void* host_count = c.host_count.get();
      std::uint64_t n = c.slot_count;
      void* args[] = {&slots, &n, &bins, &out_count};
      const std::uint64_t tiles = (n + device::compact_block - 1) / device::compact_block;
      const unsigned grid = static_cast<unsigned>(std::min<std::uint64_t>(tiles, 1024));
      check(driver.launch(c.compact, grid, 1, 1, device::compact_block, 1, 1, 0, d.stream, args,
                          nullptr),
            "launching the post-pass");
      void* publish_args[] = {&out_count, &host_count};
      check(driver.launch(c.publish, 1, 1, 1, 1, 1, 1, 0, d.stream, publish_args, nullptr),
            "launching the post-pass's count copy");
      check(sanitizer_api().sanitizerStreamSynchronize(d.hStream), "waiting for the post-pass");
    } catch (...) {
      driver.pop(&previous);
      throw;
    }
    driver.pop(&previous);
  }
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
