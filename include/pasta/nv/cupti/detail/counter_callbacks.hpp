// Hardware counters (KernelCounters) in nv::Cupti's callbacks: which CUPTI
// callbacks RangeCounters needs (launches, other GPU work, allocations), and
// what each does to it: measure a launch, replay it, stop profiling.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/pipeline.hpp>
#include <pasta/nv/counters/range_counters.hpp>
#include <pasta/nv/cupti/detail/activity_worker.hpp>
#include <pasta/nv/cupti/detail/launch_callbacks.hpp>
#include <pasta/nv/cupti/settings.hpp>
#include <pasta/nv/detail/cupti_api.hpp>

namespace pasta::nv::detail {

// What a runtime or driver call named `name` (CUPTI's callback name) is to
// the counters, 0 for none of these: GPU work that is not a launch before()
// sees, 'x' a memset, 'y' an asynchronous copy, 'c' a copy the host waits
// for, 'g' other (a graph, a capture's begin, old-style launches); while
// counters are measured, profiling stops before it, so that it is no range
// of its own (before a capture's begin, since stopping synchronises, which
// would end the capture in error). With `batches` (launches kept to be
// replayed together), 's' a synchronisation too: the host waits for the GPU
// there and at 'c', and the kept launches are replayed before it.
inline char interrupt_kind(std::string_view name, bool batches) {
  static constexpr std::array<std::string_view, 11> work{
      "cudaMemcpy",
      "cudaMemset",
      "cudaGraphLaunch",
      "cudaStreamBeginCapture",
      "cudaLaunchCooperativeKernelMultiDevice",
      "cuMemcpy",
      "cuMemset",
      "cuGraphLaunch",
      "cuStreamBeginCapture",
      "cuLaunchGrid",
      "cuLaunchCooperativeKernelMultiDevice",
  };
  static constexpr std::array<std::string_view, 6> syncs{
      "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
      "cuCtxSynchronize",      "cuStreamSynchronize",   "cuEventSynchronize",
  };
  auto starts = [&](std::string_view p) { return name.starts_with(p); };
  auto has = [&](std::string_view part) { return name.find(part) != name.npos; };
  if (std::ranges::any_of(work, starts)) {
    if (has("Memset")) return 'x';
    if (has("Memcpy")) return has("Async") ? 'y' : 'c';
    return 'g';
  }
  return batches && std::ranges::any_of(syncs, starts) ? 's' : 0;
}

// How a copy call named `name` (CUPTI's callback name) says it sends the
// host's data to the device (an upload): by its name (the driver's HtoD and
// HtoA calls), by the kind it passes (the runtime's cudaMemcpy and
// cudaMemcpyAsync, and their per-thread forms), or not at all (any other
// call, a runtime copy of cudaMemcpyDefault included: no upload to pasta).
// A wait after an upload leaves the launches kept for a batch kept: the
// program goes on to use what it sent (RangeCounters::interrupt()).
enum class Upload : std::uint8_t { no, by_name, by_kind };
inline Upload upload_of(std::string_view name) {
  static constexpr std::array<std::string_view, 4> by_kind{
      "cudaMemcpy_v3020", "cudaMemcpyAsync_v3020", "cudaMemcpy_ptds_v7000",
      "cudaMemcpyAsync_ptsz_v7000"};
  if (std::ranges::find(by_kind, name) != by_kind.end()) return Upload::by_kind;
  if (name.starts_with("cuMemcpyHtoD") || name.starts_with("cuMemcpyHtoA")) return Upload::by_name;
  return Upload::no;
}
// Whether the call with parameters `params` (its callback's) uploads.
inline bool uploads(Upload how, const void* params) {
  if (how == Upload::by_kind)
    return params && static_cast<const RuntimeCopyParams*>(params)->kind == cudaMemcpyHostToDevice;
  return how == Upload::by_name;
}
// An interrupt callback (interrupt_kind()) and how its call says it uploads.
struct Interrupt {
  char kind = 0;
  Upload upload = Upload::no;
};

class CounterCallbacks {
 public:
  CounterCallbacks(const Config& cfg, const CuptiSettings& own) {
    counters_.set_per_signature(own.counter_launches);
    counters_.set_flush_cache(own.counter_cache_flush);
    counters_.set_user_replay(own.counter_user_replay);
    counters_.set_batch(own.counter_batch);
    counters_.set_verbose(cfg.verbose);
  }

  // The callbacks the counters need, `launches_on` whether the launch
  // callbacks are on already; `own_records` whether kernel or copy records
  // are (then pasta's own calls are kept, to drop their records),
  // `kernel_records` whether kernel records are.
  void enable(CUpti_SubscriberHandle subscriber, bool launches_on, bool own_records,
              bool kernel_records) {
    enable_callbacks(subscriber, launches_on);
    own_records_ = own_records;
    counters_.set_kernel_records(kernel_records);
  }
  // The callbacks counters need, on again (after another part of the
  // handler turned some of the same off: the operator tags' pause).
  void enable_callbacks(CUpti_SubscriberHandle subscriber, bool launches_on) {
    if (!launches_on) enable_launch_callbacks(subscriber);
    enable_interrupt_callbacks(subscriber);
    if (!counters_.user_replay()) return;
    enable_memory_callbacks(subscriber);
    for (CUpti_CallbackId id :
         {CUPTI_CBID_RESOURCE_MODULE_LOADED, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
          CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING})
      cupti_ok(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, id),
               "a resource callback");
  }

  // Every callback, pasta's own included, first: true when it is a replay's
  // (pasta's own call, nothing else to do). The measured launch's return
  // ends its measurement.
  template <class Sink>
  bool on_any_callback(Sink* sink, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                       const void* data, OwnCalls& own_calls) {
    // A module's image, pasta's own loads included (a replayed kernel's
    // first load may come from cuFuncLoad on pasta's thread).
    if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED &&
        counters_.user_replay()) {
      const auto* m = static_cast<const CUpti_ModuleResourceData*>(
          static_cast<const CUpti_ResourceData*>(data)->resourceDescriptor);
      if (m && m->pCubin && m->cubinSize)
        counters_.module_loaded({reinterpret_cast<const std::byte*>(m->pCubin), m->cubinSize});
    }
    if (RangeCounters::replaying()) {  // a replay's own thread: pasta's calls
      // Only kernel and copy records are read (and so taken from the set).
      if (own_records_ &&
          (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) &&
          static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_ENTER)
        own_calls.add(static_cast<const CUpti_CallbackData*>(data)->correlationId);
      return true;
    }
    // The launch measured: its range is in, perhaps time to decode (even
    // while stopping: before() holds the counters until this after()).
    if (counting() && !pasta::detail::inside_dispatch() && is_launch(domain, cbid) &&
        static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_EXIT &&
        runtime_depth() == (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 1 : 0)) {
      counting() = false;
      counters_.after([&](const KernelCounters& c) { sink->emit(c); });
    }
    return false;
  }

  // A callback of the program's: true when it was the counters' alone (an
  // allocation, GPU work that stops profiling).
  template <class Sink>
  bool on_callback(Sink& sink, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                   const void* data) {
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
      // A module unloading or a context ending: the launches kept for a
      // batch can no longer be replayed safely.
      if ((cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING ||
           cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) &&
          !counting()) {
        counters_.releasing([&](const KernelCounters& c) { sink.emit(c); }, false);
        counters_.modules_changing();
      }
      return false;
    }
    if (const auto call = memory_calls_(domain, cbid); call != MemoryCall::none) {
      // The program's allocations, for user replay to save; the launches
      // kept for a batch replayed before memory or kernels go.
      const auto& cb = *static_cast<const CUpti_CallbackData*>(data);
      if (cb.callbackSite == CUPTI_API_ENTER &&
          (call == MemoryCall::free || call == MemoryCall::unmap) && !counting())
        counters_.releasing([&](const KernelCounters& c) { sink.emit(c); }, true, call_name(cb));
      if (cb.callbackSite == CUPTI_API_EXIT && cb.functionReturnValue &&
          *static_cast<const int*>(cb.functionReturnValue) == 0)
        if (const auto change = memory_change(call, cb.functionParams)) track(*change);
      return true;
    }
    if (const Interrupt in = interrupts_(domain, cbid); in.kind) {
      const auto& cb = *static_cast<const CUpti_CallbackData*>(data);
      // The driver's calls under a runtime one are the same work: only the
      // runtime call (the outermost) is seen.
      const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
      const bool enter = cb.callbackSite == CUPTI_API_ENTER;
      int& inside = runtime_interrupt_depth();
      if (runtime && !enter && inside > 0) --inside;
      if (enter && (runtime || inside == 0) && !counting())
        counters_.interrupt([&](const KernelCounters& c) { sink.emit(c); }, in.kind, call_name(cb),
                            uploads(in.upload, cb.functionParams));
      if (runtime && enter) ++inside;
      // Only counters asked for these callbacks, but for synchronisations,
      // which the handler may report too.
      return in.kind != 's';
    }
    const auto& cb = *static_cast<const CUpti_CallbackData*>(data);
    // The outermost launch call: a runtime launch, or a driver launch outside
    // one (or under one that had no context yet).
    if (is_launch(domain, cbid) && cb.callbackSite == CUPTI_API_ENTER && !counting() &&
        reported_launch_entry(domain, cb)) {
      counting() = true;
      const auto shape = launch_shape(domain, cbid, cb.functionParams);
      CUstream stream = shape ? shape->stream : nullptr;
      if (!stream && per_thread_stream(domain, cbid)) stream = CU_STREAM_PER_THREAD;
      counters_.before(cb.context, stream, cb.correlationId, shape ? signature(cb, *shape) : 0,
                       [&](const KernelCounters& c) { sink.emit(c); });
    }
    // The driver's launch call under it (or the same call): pasta replays
    // the kernel here, before the call runs, if before() chose it.
    if (counting() && domain == CUPTI_CB_DOMAIN_DRIVER_API && cb.callbackSite == CUPTI_API_ENTER &&
        counters_.owes())
      if (const auto call = driver_call(cbid))
        counters_.replay({*call, cb.functionParams},
                         [&](const KernelCounters& c) { sink.emit(c); });
    return false;
  }

  // The launches not decoded yet; once, at the end.
  template <class Sink>
  void finish(Sink& sink) {
    counters_.finish([&](const KernelCounters& c) { sink.emit(c); });
  }
  // What the counters did, in the log (all of it when `verbose`).
  void log_summary(bool verbose) const;
  // Why some launches were not measured as they should be; empty if none.
  const std::string& partial_reason() const {
    return !counters_.error().empty() ? counters_.error() : counters_.flush_error();
  }

 private:
  // Inside a launch that RangeCounters::before saw: after() is owed.
  static bool& counting() {
    thread_local bool on = false;
    return on;
  }
  // The program's call a callback is of (CUPTI's name; empty if none).
  static std::string_view call_name(const CUpti_CallbackData& cb) {
    return cb.functionName ? cb.functionName : "";
  }
  // Inside a runtime call among the interrupt callbacks: how deep.
  static int& runtime_interrupt_depth() {
    thread_local int depth = 0;
    return depth;
  }
  // The interrupt callbacks (interrupt_kind()), found by name among CUPTI's
  // runtime and driver callbacks.
  void enable_interrupt_callbacks(CUpti_SubscriberHandle subscriber) {
    const bool batches = counters_.user_replay() && counters_.batch() > 1;
    for (auto [domain, size] :
         {std::pair{CUPTI_CB_DOMAIN_RUNTIME_API, std::uint32_t{CUPTI_RUNTIME_TRACE_CBID_SIZE}},
          std::pair{CUPTI_CB_DOMAIN_DRIVER_API, std::uint32_t{CUPTI_DRIVER_TRACE_CBID_SIZE}}}) {
      for (CUpti_CallbackId id = 1; id < size; ++id) {
        const char* name = nullptr;
        if (cuptiGetCallbackName(domain, id, &name) != CUPTI_SUCCESS || !name) continue;
        if (const char kind = interrupt_kind(name, batches))
          if (cuptiEnableCallback(1, subscriber, domain, id) == CUPTI_SUCCESS)
            interrupts_.set(domain, id, {kind, upload_of(name)});
      }
    }
  }
  // The allocation calls (memory_calls), for user replay.
  void enable_memory_callbacks(CUpti_SubscriberHandle subscriber) {
    for (const auto& m : memory_calls)
      if (cupti_ok(cuptiEnableCallback(1, subscriber, m.domain, m.cbid), "an allocation callback"))
        memory_calls_.set(m.domain, m.cbid, m.call);
  }
  void track(const MemoryChange& c) {
    switch (c.kind) {
      case MemoryChange::added:
        counters_.allocated(c.base, c.bytes);
        break;
      case MemoryChange::removed:
        counters_.freed(c.base);
        break;
      case MemoryChange::unmapped:
        counters_.unmapped(c.base, c.bytes);
        break;
    }
  }
  // How a driver launch callback's parameters relaunch the kernel.
  static std::optional<RangeCounters::Call> driver_call(CUpti_CallbackId cbid) {
    using Call = RangeCounters::Call;
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
        return Call::kernel;
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
        return Call::kernel_ex;
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
        return Call::cooperative;
      default:
        return std::nullopt;
    }
  }

  RangeCounters counters_;
  // What GPU work a callback is: interrupt_kind() and upload_of() of its name.
  ByCallback<Interrupt> interrupts_;
  ByCallback<MemoryCall> memory_calls_;  // enable_memory_callbacks
  bool own_records_ = false;             // kernel or copy records on: own calls are kept
};

inline void CounterCallbacks::log_summary(bool verbose) const {
  const CounterTally& t = counters_.tally();
  // Said without PASTA_VERBOSE too where launches went unmeasured, or where a
  // replayed kernel's `__device__` variable could not be saved (the
  // program's results may then change).
  const bool unmeasured = t.unsaved || t.unreplayed || t.dropped || t.unrelaunched;
  if (counters_.user_replay() && (verbose || unmeasured || counters_.variables_missed()))
    pasta::detail::log(fmt::format(
        "cupti handler: hardware counters by user replay: {} launches replayed by pasta, "
        "{:.2f} GiB of device memory saved per launch on average ({} allocations known at the "
        "end), L2 flushed before {} passes; {} batches of launches replayed together (up to {}); "
        "{} replays before their batch was full ({} where the host waited for the GPU, {} at a "
        "free{}), {} waits after an upload that left them kept (the program launches next); {} "
        "launches replayed alone (not kept); {} `__device__` variables of replayed "
        "kernels saved with the allocations (in {} copies at most){}; {} saves' allocations "
        "copied in one batched call, {} saves' and restores' variables by one launch of pasta's "
        "copy kernel ({} of those restores in the launch of the L2 flush after them); not "
        "measured: {} (no room to save memory), {} (no driver "
        "launch call seen), {} kept for a batch and dropped, {} left out of their batch (the "
        "driver refused to launch them again) (both measured at a later launch of their "
        "signature where there was one)",
        t.measured,
        t.measured
            ? static_cast<double>(t.replayed_bytes) / static_cast<double>(t.measured) / (1ull << 30)
            : 0.0,
        counters_.allocations(), t.flushes, t.batches, counters_.batch(), t.early_batches,
        t.early_batches - t.early_at_free, t.early_at_free,
        t.early_batches ? ": " + counters_.early_replays().summary() : std::string(),
        t.kept_at_uploads, t.alone, counters_.variables_saved(), counters_.variable_spans(),
        counters_.variables_missed()
            ? fmt::format(" ({} named in their modules' images were not found there)",
                          counters_.variables_missed())
            : std::string(),
        counters_.batched_copies(), counters_.kernel_copies(), counters_.copies_with_flush(),
        t.unsaved, t.unreplayed, t.dropped, t.unrelaunched));
  if (t.outside && verbose)
    pasta::detail::log(fmt::format(
        "cupti handler: hardware counters: {} launches outside the capture window were not "
        "measured",
        t.outside));
  if (t.captured)
    pasta::detail::log(fmt::format(
        "cupti handler: hardware counters: {} launches captured into CUDA graphs were not "
        "measured, nor are the kernels the graphs run",
        t.captured));
  if (verbose || t.mismatched || t.other_context)
    pasta::detail::log(fmt::format(
        "cupti handler: hardware counters of {} launches ({} replay passes each), {} launches "
        "measured again in one pass for {} (L2 flushed before {}), {} "
        "launches left to the measured mean of their signature; {} "
        "launches on another context and {} whose ranges did not match launches were not "
        "measured; {} ranges more than launches; profiling stopped {} times for copies, memsets "
        "or graphs; {} launches profiled in one pass and passed over; {} launches to measure in "
        "one pass left for their signature's next launch",
        t.measured, counters_.passes(), t.remeasured, counters_.cache_metrics(), t.flushes,
        t.skipped, t.other_context, t.mismatched, t.extra_ranges, t.interrupts, t.passed_over,
        counters_.waited()));
  if (verbose) {
    pasta::detail::log("cupti handler: hardware counters time: " + counters_.timing());
    pasta::detail::log("cupti handler: hardware counters, launch by launch: " +
                       counters_.sequence());
  }
}

}  // namespace pasta::nv::detail
