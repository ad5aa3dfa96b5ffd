// pasta::nv::Cupti: the NVIDIA handler most pipelines start with. Device
// timestamps of kernels, copies, memsets and allocations come from CUPTI
// activity records, processed in batches off the application's threads;
// synchronisations from the synchronising calls' API callbacks; host-side
// launch callbacks are taken only when a tool wants KernelLaunch and
// CuptiSettings::launch_callbacks asks for them (they cost about 5 us a launch).
// NVTX ranges of the program become scopes.
// When a tool wants KernelCounters (tools::OpCounters), every kernel is
// measured with CUPTI's Range Profiler (nv/counters/range_counters.hpp): slow,
// exact, the program's results unchanged. When a tool wants StallSample
// (tools::StallBlame), PC sampling runs in continuous mode on every context
// that launches (nv/sampling/pc_sampling.hpp). Everything is enabled only if some
// tool consumes it.
//
// The class: it subscribes and composes. Its callback, one function per
// domain, is defined in dispatch.hpp; include pasta/nv/cupti.hpp for both.
// The parts are under detail/: activity_worker.hpp (records, pasta's thread), launch_callbacks.hpp,
// sync_callbacks.hpp, nvtx_scopes.hpp, op_tags.hpp, graph_callbacks.hpp,
// counter_callbacks.hpp, sampling_callbacks.hpp, skip.hpp.
#pragma once

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/capture_window.hpp>
#include <pasta/core/detail/op_correlation.hpp>
#include <pasta/core/detail/thread.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/pipeline.hpp>
#include <pasta/core/scope.hpp>
#include <pasta/nv/cupti/settings.hpp>
#include <pasta/nv/cupti/detail/activity_worker.hpp>
#include <pasta/nv/cupti/detail/counter_callbacks.hpp>
#include <pasta/nv/detail/cupti_api.hpp>
#include <pasta/nv/cupti/detail/skip.hpp>
#include <pasta/nv/cupti/detail/graph_callbacks.hpp>
#include <pasta/nv/cupti/detail/launch_callbacks.hpp>
#include <pasta/nv/cupti/detail/nvtx_scopes.hpp>
#include <pasta/nv/cupti/detail/op_tags.hpp>
#include <pasta/nv/cupti/detail/sampling_callbacks.hpp>
#include <pasta/nv/cupti/detail/sync_callbacks.hpp>

namespace pasta::nv {

class Cupti {
 public:
  static constexpr std::string_view name = "cupti";
  // CUDA allows one tools subscriber per process; core/handlers.hpp checks it.
  static constexpr std::string_view cuda_tools_subscriber = "CUPTI";
  // cudaProfilerStart/Stop and NVTX ranges bound a capture window (core/capture.hpp).
  static constexpr unsigned capture_sources =
      capture_sources::profiler_api | capture_sources::ranges;
  static constexpr std::size_t buffer_bytes = detail::ActivityWorker::buffer_bytes;
  static constexpr std::size_t max_buffers = detail::ActivityWorker::max_buffers;
  static constexpr auto min_flush_gap = detail::ActivityWorker::min_flush_gap;

  using Stats = detail::CuptiStats;

  using settings = CuptiSettings;

  explicit Cupti(const Config& cfg, const CuptiSettings& own = {})
      : skip_(own.skip),
        launch_callbacks_(own.launch_callbacks),
        verbose_(cfg.verbose),
        self_time_(cfg.self_time),
        flush_on_sync_(own.flush_on_sync),
        buffer_pool_(own.buffer_pool),
        detach_mode_(own.detach),
        sync_records_(own.sync_records),
        op_tags_(cfg.op_tags),
        counters_(cfg, own),
        sampling_(own),
        activity_(stats_, std::chrono::milliseconds(own.flush_ms)) {
    // Now, before the profiler's first scope initialises NVTX.
    if (!skipped(detail::skip_nvtx)) detail::route_nvtx_to_cupti();
  }
  ~Cupti() { stop(); }
  Cupti(const Cupti&) = delete;
  Cupti& operator=(const Cupti&) = delete;

  template <class Sink>
  void start(Sink& sink);
  void stop();
  // Every record CUPTI holds, processed before this returns.
  void flush() {
    if (!active_) return;
    activity_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    activity_.drain();
  }

  bool active() const { return active_; }
  const Stats& stats() const { return stats_; }
  // Why the reports may miss events; empty when nothing was lost.
  std::string partial_reason() const {
    if (!error_.empty()) return error_;
    if (const auto& why = counters_.partial_reason(); !why.empty()) return why;
    if (auto why = sampling_.partial_reason(); !why.empty()) return why;
    if (const auto missed = stats_.missed_windows.load())
      return fmt::format(
          "a capture window opened within {} ms of the previous one's close, while CUPTI was "
          "being attached again, and was not recorded ({} cudaProfilerStop found no window "
          "open); CUPTI stayed attached from then on (PASTA_CUPTI_DETACH=last, the default, "
          "keeps it attached between cudaProfilerApi windows)",
          attach_settle.count(), missed);
    const auto dropped = stats_.dropped.load(), refused = stats_.refused.load();
    if (!dropped && !refused) return {};
    return fmt::format("CUPTI dropped {} activity records ({} buffers refused at the {} MiB limit)",
                       dropped, refused, max_buffers * buffer_bytes >> 20);
  }

 private:
  // One function per callback domain; on_callback picks.
  template <class Sink>
  static void CUPTIAPI on_callback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const void* data);
  template <class Sink>
  void on_module(Sink& sink, CUpti_CallbackId cbid, const CUpti_ResourceData& r);
  template <class Sink>
  void on_runtime(Sink& sink, CUpti_CallbackId cbid, const CUpti_CallbackData& cb);
  template <class Sink>
  void on_driver(Sink& sink, CUpti_CallbackId cbid, const CUpti_CallbackData& cb);
  template <class Sink>
  void on_sync(Sink& sink, const detail::SyncCall& call, const CUpti_CallbackData& cb);
  // The worker's buffers, as the sink's events.
  template <class Sink>
  static void process_buffer(void* owner, std::uint8_t* buffer, std::size_t valid) {
    auto* self = static_cast<Cupti*>(owner);
    pasta::detail::SelfTimer timer(self->self_time_ ? &self->stats_.buffer_time : nullptr);
    self->stats_.records.fetch_add(
        self->records_.process(*static_cast<Sink*>(self->sink_), buffer, valid),
        std::memory_order_relaxed);
  }
  // At each wake-up of the worker: the program threads' queued events.
  template <class Sink>
  static void settle_sink(void* owner) {
    auto* self = static_cast<Cupti*>(owner);
    pasta::detail::SelfTimer timer(self->self_time_ ? &self->stats_.settle_time : nullptr);
    static_cast<Sink*>(self->sink_)->settle();
  }
  static std::atomic<Cupti*>& current() {
    static std::atomic<Cupti*> c{nullptr};
    return c;
  }

  static bool check(CUptiResult r, std::string_view what) { return detail::cupti_ok(r, what); }
  // Kinds of work the program does (kernels, copies, memsets,
  // synchronisations) are collected only inside the capture window; the
  // state they are read against (allocations, contexts, devices) always.
  // `again`: enabled again when CUPTI is attached again after a window
  // (devices are not: their records came at the first attach).
  struct Kind {
    CUpti_ActivityKind kind;
    std::string_view what;
    bool windowed;
    bool again;
  };
  void add_kind(CUpti_ActivityKind kind, std::string_view what, bool work = true,
                bool again = true) {
    kinds_[kind_count_++] = {kind, what, work && !pasta::detail::capture_window().whole(), again};
  }
  // The kinds the window's state asks for (with window_mutex_ held, or before listening).
  void enable_kinds(bool again) {
    for (int i = 0; i < kind_count_; ++i) {
      const Kind& k = kinds_[i];
      if ((again && !k.again) || (k.windowed && !pasta::detail::capture_window().open())) continue;
      check(cuptiActivityEnable(k.kind), fmt::format("enabling {} records", k.what));
      if (k.windowed) dirty_ = true;
    }
  }
  // The capture window opened or closed (on the thread that moved it).
  static void on_window(void* owner, bool open) {
    auto* self = static_cast<Cupti*>(owner);
    if (!self->active_) return;
    std::scoped_lock lock(self->window_mutex_);
    if (self->subscriber_) {  // while detached, attaching again enables what the window needs
      for (int i = 0; i < self->kind_count_; ++i)
        if (self->kinds_[i].windowed)
          open ? cuptiActivityEnable(self->kinds_[i].kind)
               : cuptiActivityDisable(self->kinds_[i].kind);
      if (open) self->dirty_ = true;
    }
    if (self->window_changed_) self->window_changed_(self, open);
    self->pause_tags(!open);
    // A steps window never opens again: CUPTI goes at the next driver call's
    // exit (detach_last), the site cuptiFinalize asks for.
    if (!open && self->detach_last_ && self->subscriber_ &&
        check(cuptiEnableDomain(1, self->subscriber_, CUPTI_CB_DOMAIN_DRIVER_API),
              "the driver callbacks to detach CUPTI at"))
      self->last_pending_ = true;
    // The window's records reach the tools without waiting for the next
    // flush (with detach_, at cuProfilerStop's exit: detach()).
    if (!open && !self->detach_) self->activity_.request_flush();
  }

  // CUPTI keeps slowing every launch after the window's record kinds are
  // disabled (measured in docs/benchmarks.md; PyTorch's profiler detaches
  // it after a trace for the same reason). So at cuProfilerStop's exit, the
  // site cuptiFinalize asks for, pasta detaches CUPTI (it hands the
  // window's records over), and its worker attaches it again attach_settle
  // later with only what was on before the first window (PASTA_CUPTI_DETACH=every).
  // A window that opens in between is missed: if its cuProfilerStop comes
  // after the attach, it finds no window open, which counts it
  // (partial_reason); if both come in between, nothing can see it.
  static constexpr auto attach_settle = std::chrono::milliseconds(20);
  void detach() {
    const auto t0 = std::chrono::steady_clock::now();
    std::scoped_lock lock(window_mutex_, tags_mutex_);
    if (!active_ || !dirty_ || !subscriber_ || pasta::detail::capture_window().open()) return;
    activity_.finalize();
    subscriber_ = nullptr;
    dirty_ = false;
    activity_.attach_after(attach_again_, attach_settle);
    const std::uint64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now() - t0)
                                 .count();
    stats_.detaches.fetch_add(1, std::memory_order_relaxed);
    auto most = stats_.detach_ns_max.load(std::memory_order_relaxed);
    while (ns > most && !stats_.detach_ns_max.compare_exchange_weak(most, ns)) {
    }
  }
  // After the last window, at a driver call's exit on any thread: CUPTI
  // detached for good (its records handed over), never attached again.
  void detach_last() {
    std::scoped_lock lock(window_mutex_, tags_mutex_);
    if (!last_pending_.exchange(false) || !subscriber_) return;
    activity_.finalize();
    subscriber_ = nullptr;
    stats_.detaches.fetch_add(1, std::memory_order_relaxed);
  }
  // On the worker: CUPTI as start() left it outside a window. False if it
  // stays detached (stop() began, or subscribing failed).
  template <class Sink>
  bool attach() {
    std::scoped_lock lock(window_mutex_, tags_mutex_);
    if (!active_ || subscriber_) return subscriber_ != nullptr;
    const CUptiResult sub =
        cuptiSubscribe(&subscriber_, reinterpret_cast<CUpti_CallbackFunc>(&on_callback<Sink>), this);
    if (sub != CUPTI_SUCCESS) {
      subscriber_ = nullptr;
      error_ = fmt::format(
          "CUPTI: subscribing again after a capture window failed: {}; later windows are "
          "not recorded",
          detail::cupti_error(sub));
      pasta::detail::log(error_);
      return false;
    }
    enable_callbacks<Sink>();
    activity_.listen(this, &process_buffer<Sink>, buffer_pool_);
    enable_kinds(true);
    if (tag_ops_ && tags_armed_) {
      if (!skipped(detail::skip_graphs)) detail::enable_graph_callbacks(subscriber_);
      if (!tags_paused_) detail::enable_tag_callbacks(subscriber_);
    }
    return true;
  }
  // The callbacks that stay on outside a window (start() and attach()).
  template <class Sink>
  void enable_callbacks();
  // start()'s parts, in the order it calls them.
  template <class Sink>
  bool subscribe(Sink& sink);
  template <class Sink>
  void enable_records(Sink& sink, bool sync_wanted);
  void tag_operators();
  void say_enabled(bool activities, bool scopes) const;
  // Some tool wants what CUPTI's activity records give.
  template <class Sink>
  static constexpr bool wants_records() {
    return Sink::template wants<KernelComplete>() || Sink::template wants<KernelLaunch>() ||
           Sink::template wants<Memcpy>() || Sink::template wants<Memset>() ||
           Sink::template wants<MemAlloc>() || Sink::template wants<MemFree>() ||
           Sink::template wants<Synchronize>() || Sink::template wants<DeviceInfo>();
  }

  // Tagging device work with operators takes two CUPTI callbacks a launch,
  // the driver call's entry and exit (op_tags.hpp; 20-200 ns a launch on an
  // H200, bench/gpu/probe/launch_callbacks.cu), and four a runtime copy or
  // memset: they are turned on
  // when an operator source enters its first operator, so a pipeline whose
  // tools show operators costs nothing for them in a program that has none.
  // Threads entering operators meanwhile wait for them.
  // An operator source with its own stack (op_stack()) is asked at each
  // tagged call instead: its operators are not pushed here.
  static void first_op_enter(std::uint64_t op, NameId name) {
    if (Cupti* self = current().load(std::memory_order_acquire)) self->arm_tags();
    if (!pasta::detail::op_stack().load(std::memory_order_acquire)) detail::op_enter(op, name);
  }
  static constexpr pasta::detail::OpCorrelator first_op_hooks{&first_op_enter, &detail::op_exit};
  void arm_tags() {
    std::scoped_lock lock(tags_mutex_);
    if (tags_armed_) return;
    tags_armed_ = true;
    // Detached, attach() turns them on.
    const int tagged =
        tags_paused_ || !subscriber_ ? 0 : detail::enable_tag_callbacks(subscriber_);
    // A graph's work is charged to the operator current when it was
    // captured, not to the one that launches it (graph_callbacks.hpp).
    const int graphs = skipped(detail::skip_graphs) || !subscriber_
                           ? 0
                           : detail::enable_graph_callbacks(subscriber_);
    if (verbose_)
      pasta::detail::log(
          fmt::format("cupti handler: at the first operator, operators tagged "
                      "through {} launch, copy and memset callbacks and {} graph "
                      "callbacks",
                      tagged, graphs));
    // From here on, a source with its own stack calls nothing at its operators.
    const pasta::detail::OpCorrelator* first = &first_op_hooks;
    pasta::detail::op_correlator().compare_exchange_strong(
        first, pasta::detail::op_stack().load(std::memory_order_acquire) ? nullptr
                                                                          : &detail::op_hooks);
  }

  // Outside the capture window no device work is recorded, so nothing is
  // tagged: the two callbacks a launch are off there (a long run profiled
  // for a window pays for them only inside it), and on again when it opens.
  // The tags' callbacks include calls that synchronise, launch and copy,
  // which the synchronisation, launch and counter callbacks take too: those
  // are turned on again after a pause (outside the window, counters count
  // the launches they leave unmeasured).
  void pause_tags(bool pause) {
    std::scoped_lock lock(tags_mutex_);
    if (tags_paused_ == pause) return;
    tags_paused_ = pause;
    if (!tags_armed_ || !active_ || !subscriber_) return;
    detail::enable_tag_callbacks(subscriber_, !pause);
    if (pause && callbacks_again_) callbacks_again_(this);
  }

  // PASTA_CUPTI_SKIP (detail/skip.hpp).
  bool skipped(unsigned what) const { return (skip_ & what) != 0; }

  unsigned skip_;  // CuptiSettings::skip (PASTA_CUPTI_SKIP)
  bool launch_callbacks_;
  bool verbose_;
  bool self_time_;  // Config::self_time
  bool flush_on_sync_;
  bool buffer_pool_;  // CuptiSettings::buffer_pool
  CuptiSettings::Detach detach_mode_;  // CuptiSettings::detach
  bool sync_records_;                  // CuptiSettings::sync_records: CUPTI's, not the callbacks'
  bool sync_events_ = false;           // Synchronize events come from the callbacks (start())
  // every: this pipeline and window allow it (start()), until a window is
  // missed (on_driver)
  std::atomic<bool> detach_ = false;
  bool detach_last_ = false;  // last: after a steps window (on_window, detach_last())
  std::atomic<bool> last_pending_ = false;  // ... at the next driver call's exit
  bool dirty_ = false;   // window kinds were enabled since CUPTI was attached
  bool (*attach_again_)(void*) = nullptr;  // attach<Sink>, for the worker
  void (*callbacks_again_)(Cupti*) = nullptr;  // enable_callbacks<Sink> and counters' (pause_tags)
  bool scopes_ = false;  // NVTX callbacks (start())
  bool op_tags_;                       // Config::op_tags: tag device work with operators
  bool tag_ops_ = false;               // ... and a tool reads them: the callbacks tag
  std::mutex tags_mutex_;              // guards tags_armed_, tags_paused_
  bool tags_armed_ = false;            // the tagging callbacks are on (or stop() began)
  bool tags_paused_ = false;           // ... but off while the capture window is closed
  void (*unqueue_)(Cupti*) = nullptr;  // the sink's queue_when_busy, if the worker settles it
  bool host_launches_ = false;         // KernelLaunch comes from callbacks, not from records
  detail::CounterCallbacks counters_;  // KernelCounters, when a tool wants them
  void (*finish_counters_)(Cupti*) = nullptr;
  detail::SamplingCallbacks sampling_;  // StallSample, when a tool wants them
  void (*finish_sampling_)(Cupti*) = nullptr;
  bool active_ = false;
  void* sink_ = nullptr;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  Kind kinds_[16] = {};  // the record kinds the tools want
  int kind_count_ = 0;
  std::mutex window_mutex_;  // guards the window's kinds, subscriber_ and dirty_ after start()
  void (*window_changed_)(Cupti*, bool open) = nullptr;  // PC sampling follows the window
  bool profiler_api_ = false;                            // cudaProfilerStart/Stop move the window
  Stats stats_;
  std::string error_;
  detail::ActivityRecords records_;
  detail::ActivityWorker activity_;  // last: its thread stops before records_ goes
};

template <class Sink>
void Cupti::start(Sink& sink) {
  constexpr bool kernels =
      Sink::template wants<KernelComplete>() || Sink::template wants<KernelLaunch>();
  constexpr bool scopes = Sink::template wants<ScopeBegin>() || Sink::template wants<ScopeEnd>();
  constexpr bool activities = wants_records<Sink>();
  static_assert(activities ==
                (kernels || Sink::template wants<Memcpy>() || Sink::template wants<Memset>() ||
                 Sink::template wants<MemAlloc>() || Sink::template wants<MemFree>() ||
                 Sink::template wants<Synchronize>() || Sink::template wants<DeviceInfo>()));
  if (!subscribe<Sink>(sink)) return;
  if constexpr (Sink::template wants<KernelLaunch>()) {
    host_launches_ = launch_callbacks_;
    records_.set_host_launches(host_launches_);
  }
  auto& window = pasta::detail::capture_window();
  profiler_api_ = window.kind() == CaptureRange::Kind::profiler_api;
  scopes_ = scopes && !skipped(detail::skip_nvtx);
  const bool sync_wanted = Sink::template wants<Synchronize>() && !skipped(detail::skip_sync);
  sync_events_ = sync_wanted && !sync_records_;
  enable_callbacks<Sink>();
  callbacks_again_ = [](Cupti* self) {
    self->enable_callbacks<Sink>();
    if constexpr (Sink::template wants<KernelCounters>())
      self->counters_.enable_callbacks(self->subscriber_, self->host_launches_);
  };
  if constexpr (Sink::template wants<KernelCounters>()) {
    counters_.enable(subscriber_, host_launches_, kernels || Sink::template wants<Memcpy>(),
                     activities && kernels);
    finish_counters_ = [](Cupti* self) {
      self->counters_.finish(*static_cast<Sink*>(self->sink_));
    };
  }
  if constexpr (Sink::template wants<StallSample>()) {
    sampling_.enable(subscriber_);
    finish_sampling_ = [](Cupti* self) {
      self->sampling_.finish(*static_cast<Sink*>(self->sink_));
    };
    window_changed_ = [](Cupti* self, bool open) {
      self->sampling_.window(*static_cast<Sink*>(self->sink_), open);
    };
  }
  if constexpr (activities) enable_records<Sink>(sink, sync_wanted);
  // Host events (scopes) share CUPTI's clock, so timelines line up.
  pasta::detail::set_clock(&detail::cupti_clock);
  active_ = true;
  if (!window.whole()) window.listen(this, &on_window);
  if (verbose_) say_enabled(activities, scopes);
}

// The one CUPTI handler of the process subscribes, or says why it cannot.
template <class Sink>
bool Cupti::subscribe(Sink& sink) {
  Cupti* expected = nullptr;
  if (!current().compare_exchange_strong(expected, this)) {
    error_ = "a CUPTI handler is already active in this process; this one records nothing";
    pasta::detail::log(error_);
    return false;
  }
  sink_ = &sink;
  const CUptiResult sub =
      cuptiSubscribe(&subscriber_, reinterpret_cast<CUpti_CallbackFunc>(&on_callback<Sink>), this);
  if (sub == CUPTI_SUCCESS) return true;
  error_ = sub == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
               ? "another CUPTI client (Nsight Systems, torch.profiler, compute-sanitizer, ...) "
                 "is attached to this process, and CUPTI takes one: pasta records nothing"
               : fmt::format("CUPTI: subscribing failed: {}; pasta records nothing",
                             detail::cupti_error(sub));
  pasta::detail::log(error_);
  current() = nullptr;
  return false;
}

// The activity records the tools want, processed on pasta's worker: which
// kinds, when CUPTI may be detached, device work tagged with operators, and
// the program threads' host events queued for the worker.
template <class Sink>
void Cupti::enable_records(Sink& sink, bool sync_wanted) {
  constexpr bool kernels =
      Sink::template wants<KernelComplete>() || Sink::template wants<KernelLaunch>();
  constexpr bool copies = Sink::template wants<Memcpy>();
  constexpr bool sets = Sink::template wants<Memset>();
  constexpr bool memory = Sink::template wants<MemAlloc>() || Sink::template wants<MemFree>();
  constexpr bool devices = Sink::template wants<DeviceInfo>();
  // Tools that read operators get the device work tagged with them.
  constexpr bool ops = (kernels || copies || sets) &&
                       (Sink::template wants<OpBegin>() || Sink::template wants<OpEnd>());
  activity_.listen(this, &process_buffer<Sink>, buffer_pool_);
  if constexpr (kernels) add_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel");
  if (copies && !skipped(detail::skip_memcpy)) {
    add_kind(CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy");
    add_kind(CUPTI_ACTIVITY_KIND_MEMCPY2, "peer memcpy");
  }
  if (sets && !skipped(detail::skip_memset)) add_kind(CUPTI_ACTIVITY_KIND_MEMSET, "memset");
  if (memory && !skipped(detail::skip_memory))
    add_kind(CUPTI_ACTIVITY_KIND_MEMORY2, "allocation", false);
  if (sync_wanted && sync_records_) {
    add_kind(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronization");
    add_kind(CUPTI_ACTIVITY_KIND_CONTEXT, "context", false);  // a record's device
  }
  if (devices && !skipped(detail::skip_device))
    add_kind(CUPTI_ACTIVITY_KIND_DEVICE, "device", false, false);
  enable_kinds(false);
  // Detaching needs an API call's exit to do it at (cuProfilerStop's, or
  // any driver call's after a steps window), and no CUPTI state that lives
  // across windows (counters' and PC sampling's sessions).
  constexpr bool detachable =
      !Sink::template wants<KernelCounters>() && !Sink::template wants<StallSample>();
  const auto& window = pasta::detail::capture_window();
  detach_ = detachable && profiler_api_ && detach_mode_ == CuptiSettings::Detach::every;
  detach_last_ = detachable && window.kind() == CaptureRange::Kind::steps &&
                 detach_mode_ != CuptiSettings::Detach::off;
  attach_again_ = [](void* self) { return static_cast<Cupti*>(self)->attach<Sink>(); };
  if (ops && op_tags_) tag_operators();
  // The worker takes the program threads' host events (operators,
  // tensors, scopes) off them too: they only queue each one. Not with
  // counters or PC sampling, whose events belong to the launch they
  // measure.
  if constexpr (requires(Sink & s) {
                  s.queue_always();
                  s.settle();
                } &&
                detachable) {
    activity_.on_wake(&settle_sink<Sink>);
    sink.queue_always();
    unqueue_ = [](Cupti* self) { static_cast<Sink*>(self->sink_)->queue_when_busy(); };
  }
  activity_.start_thread();
}

inline void Cupti::tag_operators() {
  // The callback of each launch, copy and memset call (op_tags.hpp)
  // records its correlation id with the calling thread's operator: no
  // API or external-correlation records, which cost most of what
  // tagging did (docs/benchmarks.md).
  records_.enable_op_tags(verbose_);
  tag_ops_ = true;
  // Those callbacks are turned on at the first operator (arm_tags), and
  // only while the capture window is open (pause_tags).
  {
    const auto& window = pasta::detail::capture_window();
    std::scoped_lock lock(tags_mutex_);
    tags_armed_ = false;
    tags_paused_ = !window.whole() && !window.open();
  }
  pasta::detail::op_correlator().store(&first_op_hooks, std::memory_order_release);
}

inline void Cupti::say_enabled(bool activities, bool scopes) const {
  Dl_info info{};
  ::dladdr(reinterpret_cast<void*>(&cuptiGetTimestamp), &info);
  const char* nvtx = std::getenv("NVTX_INJECTION64_PATH");
  pasta::detail::log(
      fmt::format("cupti handler: {} from {}; {} activity kinds; launch callbacks {}; NVTX {}; "
                  "NVTX_INJECTION64_PATH={}",
                  activities ? "activity records" : "no activity records",
                  info.dli_fname ? info.dli_fname : "?", kind_count_, host_launches_ ? "on" : "off",
                  scopes ? "on" : "off", nvtx ? nvtx : "unset"));
}

template <class Sink>
void Cupti::enable_callbacks() {
  // Device-wide synchronisations trigger a flush (on pasta's thread), so
  // tools see the work the program just waited for; every synchronisation
  // is an event when a tool wants them (sync_callbacks.hpp).
  if (sync_events_ || (wants_records<Sink>() && flush_on_sync_))
    detail::enable_sync_callbacks(subscriber_, sync_events_);
  if (host_launches_) detail::enable_launch_callbacks(subscriber_);
  if (profiler_api_)
    for (CUpti_CallbackId id :
         {CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop})
      check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id),
            "the cuProfilerStart/Stop callbacks");
  if constexpr (Sink::template wants<ModuleLoad>() || Sink::template wants<ModuleImage>())
    check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                              CUPTI_CBID_RESOURCE_MODULE_LOADED),
          "the module-load callback");
  if (scopes_) check(cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_NVTX), "NVTX callbacks");
}

inline void Cupti::stop() {
  if (!active_) return;
  pasta::detail::capture_window().forget(this);
  {
    std::scoped_lock lock(window_mutex_);  // a window change under way ends first
    active_ = false;
  }
  if (finish_counters_) {
    finish_counters_(this);
    counters_.log_summary(verbose_);
  }
  if (finish_sampling_) {
    finish_sampling_(this);
    sampling_.log_summary(verbose_);
  }
  {
    std::scoped_lock lock(tags_mutex_);
    tags_armed_ = true;  // no callbacks turned on from here on
  }
  for (const pasta::detail::OpCorrelator* ours : {&detail::op_hooks, &first_op_hooks})
    pasta::detail::op_correlator().compare_exchange_strong(ours, nullptr);
  if (unqueue_) unqueue_(this);  // no worker to take queued events from here on
  activity_.stop_thread();
  // The last records: CUPTI hands every buffer back, then this thread
  // processes what the worker did not (a detached CUPTI handed them over).
  activity_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  activity_.drain();
  if (verbose_)
    pasta::detail::log(fmt::format(
        "cupti handler: {} records in {} buffers, {} dropped, {} buffers refused, {} callbacks, "
        "{} flushes taking {:.1f} ms; buffers handed out {} reused, {} new",
        stats_.records.load(), stats_.buffers.load(), stats_.dropped.load(), stats_.refused.load(),
        stats_.callbacks.load(), stats_.flushes.load(), stats_.flush_ns.load() / 1e6,
        activity_.pool().reused(), activity_.pool().fresh()));
  if (verbose_ && tag_ops_) detail::log_graph_summary(records_.graph_ops());
  if (self_time_)
    for (const auto& [what, t] :
         {std::pair{"API callbacks (program threads)", &stats_.callback_time},
          std::pair{"activity buffers (worker)", &stats_.buffer_time},
          std::pair{"queued host events (worker)", &stats_.settle_time}})
      pasta::detail::log("cupti handler: self time: " +
                         pasta::detail::describe_self_time(what, *t));
  if (detach_last_ && verbose_)
    pasta::detail::log(stats_.detaches.load()
                           ? "cupti handler: CUPTI detached after the capture window closed"
                           : "cupti handler: CUPTI stayed attached (the capture window did not "
                             "close before the end)");
  if (detach_ && verbose_)
    pasta::detail::log(fmt::format(
        "cupti handler: CUPTI detached at {} capture windows' close (longest {:.1f} ms) "
        "and attached again {} ms later",
        stats_.detaches.load(), stats_.detach_ns_max.load() / 1e6, attach_settle.count()));
  if (subscriber_) {  // not detached
    for (int i = 0; i < kind_count_; ++i) cuptiActivityDisable(kinds_[i].kind);
    cuptiUnsubscribe(subscriber_);
  }
  kind_count_ = 0;
  subscriber_ = nullptr;
  pasta::detail::set_clock(nullptr);
  activity_.forget();
  current() = nullptr;
}

}  // namespace pasta::nv
