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
// begin() hands out a recorder whose device table is empty; end() reduces it
// on the device (the post-pass access.cuh registers: CUB DeviceSelect on
// NVIDIA, rocPRIM select on AMD) into pinned host memory, waits for the
// stream, and emits KernelLaunch, KernelComplete (device time from events
// around the launch), MemAlloc for allocations seen the first time, and
// AccessHistogram per allocation page. No CUPTI, no Sanitizer API: the only
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

namespace pasta::device {

class Annotations {
 public:
  static constexpr std::string_view name = "device_annotations";
  using Stream = detail::gpu::Stream;
  // Launches between begin and end at once (each has a table of its own).
  static constexpr std::size_t max_in_flight = 16;

  explicit Annotations(const Config& cfg)
      : page_bytes_(std::max<std::uint64_t>(cfg.page_bytes, 1u << default_bin_shift)),
        bins_(std::bit_ceil(std::max<std::uint64_t>(cfg.annotation_bins, 1024))) {}
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
  }

 private:
#if defined(PASTA_DEVICE_ANNOTATIONS)
  // One launch's device table, its post-pass output and its timing events.
  struct Slot {
    Table table{};
    Bin* out = nullptr;                       // pinned host
    unsigned long long* count = nullptr;      // pinned host
    unsigned long long* host_lost = nullptr;  // pinned host
    void* temp = nullptr;
    std::size_t temp_bytes = 0;
    detail::gpu::Event started{}, finished{};
    bool busy = false;
    // The launch it holds.
    KernelLaunch launch{};

    void release() {  // best effort: a failing free leaves nothing to undo
      if (table.bins) (void)detail::gpu::free(table.bins);
      if (table.lost) (void)detail::gpu::free(table.lost);
      if (temp) (void)detail::gpu::free(temp);
      for (void* p :
           {static_cast<void*>(out), static_cast<void*>(count), static_cast<void*>(host_lost)})
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
  using EmitFn = void (*)(void* sink, Annotations&, std::span<Bin>, const Slot&,
                          const detail::Collect&, std::uint64_t device_ns);
  template <class Sink>
  static void emit_to(void* sink, Annotations& self, std::span<Bin> bins, const Slot& slot,
                      const detail::Collect& c, std::uint64_t device_ns);

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
  Slot& take_slot();  // under mutex_

  std::uint64_t page_bytes_;
  std::uint64_t bins_;
  std::atomic<bool> active_{false};
  void* sink_ = nullptr;
  EmitFn emit_ = nullptr;
  std::mutex mutex_;  // guards slots_, allocations_, epoch_
  std::vector<std::unique_ptr<Slot>> slots_;
  detail::Allocations allocations_;
  std::uint64_t epoch_ = 0;
  std::atomic<std::uint64_t> next_correlation_{1};
  std::atomic<std::uint64_t> launches_{0}, lost_{0};
};

#if defined(PASTA_DEVICE_ANNOTATIONS)

inline Annotations::Slot& Annotations::take_slot() {
  for (auto& s : slots_)
    if (!s->busy) return *s;
  if (slots_.size() >= max_in_flight)
    throw std::runtime_error(fmt::format(
        "more than {} annotated launches between begin() and end() at once", max_in_flight));
  auto s = std::make_unique<Slot>();
  try {
    const std::size_t table_bytes = bins_ * sizeof(Bin);
    check(detail::gpu::alloc(reinterpret_cast<void**>(&s->table.bins), table_bytes),
          fmt::format("allocating the {} MiB device table", table_bytes >> 20));
    check(detail::gpu::alloc(reinterpret_cast<void**>(&s->table.lost), sizeof(unsigned long long)),
          "allocating the lost-access counter");
    check(detail::gpu::alloc_host(reinterpret_cast<void**>(&s->out), table_bytes),
          fmt::format("allocating {} MiB of pinned host memory", table_bytes >> 20));
    check(detail::gpu::alloc_host(reinterpret_cast<void**>(&s->count), sizeof(unsigned long long)),
          "allocating pinned host memory");
    check(detail::gpu::alloc_host(reinterpret_cast<void**>(&s->host_lost),
                                  sizeof(unsigned long long)),
          "allocating pinned host memory");
    if (!post_pass())
      throw std::runtime_error(
          "no post-pass: include <pasta/device/access.cuh> in the .cu/.hip file of the "
          "annotated kernels, with PASTA_DEVICE_ANNOTATIONS defined there too");
    check(post_pass()(nullptr, &s->temp_bytes, s->table.bins, s->out, s->count, bins_, nullptr),
          "sizing the post-pass");
    check(detail::gpu::alloc(&s->temp, s->temp_bytes), "allocating the post-pass's storage");
    check(detail::gpu::event_create(&s->started), "creating an event");
    check(detail::gpu::event_create(&s->finished), "creating an event");
    check(detail::gpu::zero(s->table.bins, table_bytes, 0), "clearing the device table");
    check(detail::gpu::zero(s->table.lost, sizeof(unsigned long long), 0),
          "clearing the device table");
    check(detail::gpu::synchronize(0), "clearing the device table");
  } catch (...) {
    s->release();
    throw;
  }
  s->table.mask = bins_ - 1;
  s->table.bin_shift = default_bin_shift;
  s->table.max_probes = default_max_probes;
  slots_.push_back(std::move(s));
  return *slots_.back();
}

inline Recorder Annotations::begin(std::string_view kernel, dim3 grid, dim3 block, Stream stream) {
  if (!active_) return {};
  try {
    int device = 0;
    check(detail::gpu::device(&device), "finding the current device");
    std::lock_guard lock(mutex_);
    Slot& s = take_slot();
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
    check(post_pass()(s.temp, &s.temp_bytes, s.table.bins, s.out, s.count, bins_, stream),
          "the post-pass (select of non-empty bins)");
    check(detail::gpu::zero(s.table.bins, bins_ * sizeof(Bin), stream), "clearing the table");
    check(detail::gpu::to_host(s.host_lost, s.table.lost, sizeof *s.host_lost, stream),
          "reading the lost-access counter");
    check(detail::gpu::zero(s.table.lost, sizeof(unsigned long long), stream),
          "clearing the table");
    check(detail::gpu::synchronize(stream), "waiting for the annotated launch");
    float ms = 0;
    check(detail::gpu::elapsed_ms(&ms, s.started, s.finished), "timing the annotated launch");
    launches_.fetch_add(1, std::memory_order_relaxed);
    lost_.fetch_add(*s.host_lost, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    const detail::Collect c{.correlation = s.launch.correlation,
                            .device = s.launch.device,
                            .bin_shift = s.table.bin_shift,
                            .page_bytes = page_bytes_,
                            .epoch = ++epoch_,
                            .time_ns = s.launch.time_ns};
    emit_(sink_, *this, std::span<Bin>(s.out, *s.count), s, c,
          static_cast<std::uint64_t>(static_cast<double>(ms) * 1e6));
    s.busy = false;
  } catch (const std::exception& e) {
    fail(e.what());
    std::lock_guard lock(mutex_);
    s.busy = false;
  }
}

template <class Sink>
void Annotations::emit_to(void* sink, Annotations& self, std::span<Bin> bins, const Slot& slot,
                          const detail::Collect& c, std::uint64_t device_ns) {
  static_cast<Sink*>(sink)->batch([&](auto& s) {
    if constexpr (Sink::template wants<KernelLaunch>()) s.emit(slot.launch);
    detail::emit_bins(bins, c, self.allocations_, &detail::gpu::allocation, [&](const auto& e) {
      using E = std::decay_t<decltype(e)>;
      if constexpr (Sink::template wants<E>()) s.emit(e);
    });
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
void Annotations::emit_to(void*, Annotations&, std::span<Bin>, const Slot&, const detail::Collect&,
                          std::uint64_t) {}

#endif

}  // namespace pasta::device
