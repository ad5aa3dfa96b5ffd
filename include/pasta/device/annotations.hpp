// pasta::device::Annotations: the handler for memory-access annotations in
// kernels you own (access.cuh). Define PASTA_DEVICE_ANNOTATIONS in every
// translation unit, compile the kernels with nvcc or hipcc, the profiler
// with any of them or with the host compiler:
//
//   pasta::Profiler<pasta::device::Annotations, pasta::proc::GpuBucketing,
//                   pasta::tools::MemHotness> prof;
//   auto& ann = prof.handler();
//   auto rec = ann.begin("vec_add", grid, block, stream);
//   vec_add<<<grid, block, 0, stream>>>(a, b, c, n, rec);  // rec.access(...) inside
//   ann.end(rec, stream);
//   // or the same in one call (access.cuh):
//   pasta::device::launch(ann, "vec_add", vec_add, grid, block, 0, stream, a, b, c, n);
//
// begin() hands out a recorder whose device table is empty and which knows
// the allocations earlier launches touched (their accesses count per page,
// as the sanitizer patches count them; others by 256-byte bin, whose
// allocations the host learns after the launch). end() compacts the
// non-empty pages and bins on the device (the post-pass access.cuh
// registers: a CUB block scan on NVIDIA, rocPRIM's on AMD) into pinned host
// memory, clearing only what it hands back, waits for the stream, and emits
// KernelLaunch, KernelComplete (device time from events around the launch),
// MemAlloc for allocations seen the first time, and AccessHistogram per
// allocation page. No CUPTI, no Sanitizer API: the only
// cost is the annotated accesses. Without PASTA_DEVICE_ANNOTATIONS, begin
// and end do nothing.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/thread.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/report.hpp>
#include <pasta/device/detail/bins.hpp>
#include <pasta/device/detail/runtime.hpp>
#include <pasta/device/layout.hpp>
#include <pasta/device/settings.hpp>

namespace pasta::device {

class Annotations {
 public:
  static constexpr std::string_view name = "device_annotations";
  using Stream = detail::gpu::Stream;
  // Launches between begin and end at once (each has a table of its own).
  static constexpr std::size_t max_in_flight = 16;

  using settings = AnnotationSettings;

  explicit Annotations(const Config& cfg, const AnnotationSettings& own = {})
      : page_bytes_(std::max<std::uint64_t>(cfg.page_bytes, 1u << default_bin_shift)),
        bins_(std::bit_ceil(std::max<std::uint64_t>(own.annotation_bins, 1024))) {}
  ~Annotations() { stop(); }
  Annotations(const Annotations&) = delete;
  Annotations& operator=(const Annotations&) = delete;

  template <class Sink>
  void start(Sink& sink) {
    sink_ = &sink;
    emit_ = &emit_to<Sink>;
    active_ = true;
  }
  void stop() {
    active_ = false;
    std::lock_guard lock(mutex_);
    for (auto& s : slots_) s->release();
    slots_.clear();
  }
  void flush() {}

  // A recorder for one launch on `stream`; pass it to the kernel, then end().
  Recorder begin(std::string_view kernel, dim3 grid, dim3 block, Stream stream = 0);
  // Counts of that launch to the tools; waits for `stream`.
  void end(const Recorder& r, Stream stream = 0);

  std::string partial_reason() const {
    const auto lost = lost_.load();
    if (!lost) return {};
    return fmt::format(
        "{} annotated accesses found no free bin in the device table of {} bins and were not "
        "counted; raise PASTA_ANNOTATION_BINS",
        lost, bins_);
  }
  void report(Report& out) const {
    out.summary("annotated launches", launches_.load());
    out.summary("annotated accesses lost (device table full)", lost_.load());
    out.summary("annotation table bins", bins_);
    if (const auto moved = moved_.load())
      out.summary("annotated accesses charged by page (their allocation changed)", moved);
  }

 private:
#if defined(PASTA_DEVICE_ANNOTATIONS)
  // One launch's device table, its post-pass output and its timing events.
  struct Slot {
    Table table{};
    Bin* out = nullptr;          // pinned host: non-empty bins
    Bin* out_pages = nullptr;    // pinned host: non-empty pages
    Counters* counts = nullptr;  // pinned host: the table's counters, read back
    std::size_t range_capacity = 0, page_capacity = 0;
    std::uint64_t known_version = 0;  // of the ranges the table holds
    std::vector<KnownRange> known;    // those ranges, on the host
    detail::gpu::Event started{}, finished{};
    bool busy = false;
    // The launch it holds.
    KernelLaunch launch{};

    void release_pages() {
      if (table.ranges) (void)detail::gpu::free(const_cast<KnownRange*>(table.ranges));
      if (table.pages) (void)detail::gpu::free(table.pages);
      if (out_pages) (void)detail::gpu::free_host(out_pages);
      table.ranges = nullptr;
      table.pages = nullptr;
      out_pages = nullptr;
      table.range_count = 0;
      table.page_count = 0;
      range_capacity = page_capacity = 0;
    }
    void release() {  // best effort: a failing free leaves nothing to undo
      release_pages();
      if (table.bins) (void)detail::gpu::free(table.bins);
      if (table.counters) (void)detail::gpu::free(table.counters);
      for (void* p : {static_cast<void*>(out), static_cast<void*>(counts)})
        if (p) (void)detail::gpu::free_host(p);
      if (started) (void)detail::gpu::event_destroy(started);
      if (finished) (void)detail::gpu::event_destroy(finished);
      *this = Slot{};
    }
  };
#else
  struct Slot {
    void release() {}
  };
#endif

  // Emits one finished launch: its events, in one batch.
  using EmitFn = void (*)(void* sink, Annotations&, const Slot&, const detail::Collect&,
                          std::uint64_t device_ns);
  template <class Sink>
  static void emit_to(void* sink, Annotations& self, const Slot& slot, const detail::Collect& c,
                      std::uint64_t device_ns);

  template <class E>
  void check(E e, std::string_view what) const {
    if (static_cast<int>(e) != 0)
      throw std::runtime_error(fmt::format("{} failed: {} ({})", what,
                                           detail::gpu::error_string(static_cast<int>(e)),
                                           static_cast<int>(e)));
  }
  void fail(std::string_view what) {
    pasta::detail::log_once(
        fmt::format("annotations:{}", what),
        fmt::format("device annotations: {}; the launch is not recorded", what));
  }
  Slot& take_slot();         // under mutex_
  void give_known(Slot& s);  // under mutex_: the known allocations to s's table

  std::uint64_t page_bytes_;
  std::uint64_t bins_;
  std::atomic<bool> active_{false};
  void* sink_ = nullptr;
  EmitFn emit_ = nullptr;
  std::mutex mutex_;  // guards slots_, allocations_, epoch_
  std::vector<std::unique_ptr<Slot>> slots_;
  detail::Allocations allocations_;
  detail::KnownRanges known_;  // allocations_ as the device looks them up
  std::uint64_t epoch_ = 0;
  std::atomic<std::uint64_t> next_correlation_{1};
  std::atomic<std::uint64_t> launches_{0}, lost_{0}, moved_{0};
};

#if defined(PASTA_DEVICE_ANNOTATIONS)

inline Annotations::Slot& Annotations::take_slot() {
  for (auto& s : slots_)
    if (!s->busy) return *s;
  if (slots_.size() >= max_in_flight)
    throw std::runtime_error(fmt::format(
        "more than {} annotated launches between begin() and end() at once", max_in_flight));
  if (!post_pass())
    throw std::runtime_error(
        "no post-pass: include <pasta/device/access.cuh> in the .cu/.hip file of the "
        "annotated kernels, with PASTA_DEVICE_ANNOTATIONS defined there too");
  auto s = std::make_unique<Slot>();
  try {
    const std::size_t table_bytes = bins_ * sizeof(Bin);
    check(detail::gpu::alloc(reinterpret_cast<void**>(&s->table.bins), table_bytes),
          fmt::format("allocating the {} MiB device table", table_bytes >> 20));
    check(detail::gpu::alloc(reinterpret_cast<void**>(&s->table.counters), sizeof(Counters)),
          "allocating the table's counters");
    check(detail::gpu::alloc_host(reinterpret_cast<void**>(&s->out), table_bytes),
          fmt::format("allocating {} MiB of pinned host memory", table_bytes >> 20));
    check(detail::gpu::alloc_host(reinterpret_cast<void**>(&s->counts), sizeof(Counters)),
          "allocating pinned host memory");
    check(detail::gpu::event_create(&s->started), "creating an event");
    check(detail::gpu::event_create(&s->finished), "creating an event");
    check(detail::gpu::zero(s->table.bins, table_bytes, 0), "clearing the device table");
    check(detail::gpu::zero(s->table.counters, sizeof(Counters), 0), "clearing the device table");
    check(detail::gpu::synchronize(0), "clearing the device table");
  } catch (...) {
    s->release();
    throw;
  }
  s->table.mask = bins_ - 1;
  s->table.bin_shift = default_bin_shift;
  s->table.max_probes = default_max_probes;
  s->table.page_shift = static_cast<unsigned>(std::countr_zero(page_bytes_));
  slots_.push_back(std::move(s));
  return *slots_.back();
}

inline void Annotations::give_known(Slot& s) {
  if (s.known_version == known_.version) return;
  const std::vector<KnownRange>& ranges = known_.ranges;
  try {
    if (ranges.size() > s.range_capacity || known_.pages > s.page_capacity) {
      s.release_pages();
      // Room to grow, so that a few new allocations do not reallocate each time.
      const std::size_t capacity = ranges.size() + ranges.size() / 2 + 16;
      const std::size_t slots = known_.pages + known_.pages / 2 + 1024;
      check(detail::gpu::alloc(reinterpret_cast<void**>(const_cast<KnownRange**>(&s.table.ranges)),
                               capacity * sizeof(KnownRange)),
            "allocating the device table of known allocations");
      check(detail::gpu::alloc(reinterpret_cast<void**>(&s.table.pages), slots * sizeof(Counts)),
            fmt::format("allocating {} MiB of page counters", slots * sizeof(Counts) >> 20));
      check(detail::gpu::alloc_host(reinterpret_cast<void**>(&s.out_pages), slots * sizeof(Bin)),
            fmt::format("allocating {} MiB of pinned host memory", slots * sizeof(Bin) >> 20));
      check(detail::gpu::zero(s.table.pages, slots * sizeof(Counts), 0), "clearing page counters");
      check(detail::gpu::synchronize(0), "clearing page counters");
      s.range_capacity = capacity;
      s.page_capacity = slots;
    }
    if (!ranges.empty())
      check(detail::gpu::to_device(const_cast<KnownRange*>(s.table.ranges), ranges.data(),
                                   ranges.size() * sizeof(KnownRange)),
            "copying the known allocations to the device");
  } catch (...) {
    s.release_pages();  // the table counts by bin alone: slower, still exact
    s.known.clear();
    s.known_version = 0;
    throw;
  }
  s.table.range_count = static_cast<unsigned>(ranges.size());
  s.table.page_count = known_.pages;
  s.known = ranges;
  s.known_version = known_.version;
}

inline Recorder Annotations::begin(std::string_view kernel, dim3 grid, dim3 block, Stream stream) {
  if (!active_) return {};
  try {
    int device = 0;
    check(detail::gpu::device(&device), "finding the current device");
    std::lock_guard lock(mutex_);
    Slot& s = take_slot();
    try {
      give_known(s);
    } catch (const std::exception& e) {
      fail(e.what());  // counted by bin only
    }
    check(detail::gpu::event_record(s.started, stream), "recording the start event");
    s.busy = true;
    s.launch = KernelLaunch{.correlation = next_correlation_.fetch_add(1),
                            .stream = reinterpret_cast<std::uint64_t>(stream),
                            .device = static_cast<std::uint32_t>(device),
                            .name = intern(kernel),
                            .grid = {grid.x, grid.y, grid.z},
                            .block = {block.x, block.y, block.z},
                            .thread = pasta::detail::thread_id(),
                            .time_ns = pasta::detail::now_ns()};
    return Recorder{.table = s.table, .correlation = s.launch.correlation};
  } catch (const std::exception& e) {
    fail(e.what());
    return {};
  }
}

inline void Annotations::end(const Recorder& r, Stream stream) {
  if (!r.table.bins || !active_) return;
  Slot* slot = nullptr;
  {
    std::lock_guard lock(mutex_);
    for (auto& s : slots_)
      if (s->busy && s->launch.correlation == r.correlation) slot = s.get();
  }
  if (!slot) return;
  Slot& s = *slot;
  try {
    check(detail::gpu::event_record(s.finished, stream), "recording the end event");
    check(post_pass()(s.table, s.out, s.out_pages, stream),
          "the post-pass (compaction of non-empty pages and bins)");
    check(detail::gpu::to_host(s.counts, s.table.counters, sizeof(Counters), stream),
          "reading the table's counters");
    check(detail::gpu::zero(s.table.counters, sizeof(Counters), stream),
          "clearing the table's counters");
    check(detail::gpu::synchronize(stream), "waiting for the annotated launch");
    float ms = 0;
    check(detail::gpu::elapsed_ms(&ms, s.started, s.finished), "timing the annotated launch");
    launches_.fetch_add(1, std::memory_order_relaxed);
    lost_.fetch_add(s.counts->lost, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    const detail::Collect c{.correlation = s.launch.correlation,
                            .device = s.launch.device,
                            .bin_shift = s.table.bin_shift,
                            .page_bytes = page_bytes_,
                            .epoch = ++epoch_,
                            .time_ns = s.launch.time_ns};
    emit_(sink_, *this, s, c, static_cast<std::uint64_t>(static_cast<double>(ms) * 1e6));
    // Allocations learnt or dropped: the next launches know.
    if (allocations_.version() != known_.version) known_ = allocations_.known(page_bytes_);
    s.busy = false;
  } catch (const std::exception& e) {
    fail(e.what());
    std::lock_guard lock(mutex_);
    s.busy = false;
  }
}

template <class Sink>
void Annotations::emit_to(void* sink, Annotations& self, const Slot& slot, const detail::Collect& c,
                          std::uint64_t device_ns) {
  static_cast<Sink*>(sink)->batch([&](auto& s) {
    if constexpr (Sink::template wants<KernelLaunch>()) s.emit(slot.launch);
    auto emit = [&](const auto& e) {
      using E = std::decay_t<decltype(e)>;
      if constexpr (Sink::template wants<E>()) s.emit(e);
    };
    self.moved_ +=
        detail::emit_pages(std::span<Bin>(slot.out_pages, slot.counts->pages_out), slot.known, c,
                           self.allocations_, &detail::gpu::allocation, emit);
    detail::emit_bins(std::span<Bin>(slot.out, slot.counts->bins_out), c, self.allocations_,
                      &detail::gpu::allocation, emit);
    if constexpr (Sink::template wants<KernelComplete>())
      s.emit(KernelComplete{.correlation = slot.launch.correlation,
                            .stream = slot.launch.stream,
                            .device = slot.launch.device,
                            .name = slot.launch.name,
                            .grid = slot.launch.grid,
                            .block = slot.launch.block,
                            .start_ns = slot.launch.time_ns,
                            .end_ns = slot.launch.time_ns + device_ns});
  });
}

#else  // annotations compiled out: the handler records nothing

inline Recorder Annotations::begin(std::string_view, dim3, dim3, detail::gpu::Stream) { return {}; }
inline void Annotations::end(const Recorder&, detail::gpu::Stream) {}
template <class Sink>
void Annotations::emit_to(void*, Annotations&, const Slot&, const detail::Collect&, std::uint64_t) {
}

#endif

}  // namespace pasta::device
