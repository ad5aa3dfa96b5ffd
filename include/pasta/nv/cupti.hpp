// pasta::nv::Cupti: the NVIDIA handler most pipelines start with. Device
// timestamps of kernels, copies, memsets, allocations and synchronisations
// come from CUPTI activity records, processed in batches off the
// application's threads; host-side launch callbacks are taken only when a
// tool wants KernelLaunch and Config::launch_callbacks asks for them (they
// cost about 5 us a launch). NVTX ranges of the program become scopes.
// When a tool wants KernelCounters (tools::OpCounters), every kernel is
// measured with CUPTI's Range Profiler under kernel replay
// (detail/range_counters.hpp): slow, exact, the program's results unchanged.
// When a tool wants StallSample (tools::StallBlame), PC sampling runs in
// continuous mode on every context that launches (detail/pc_sampling.hpp).
// Everything is enabled only if some tool consumes it.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/hash.hpp>
#include <pasta/core/detail/op_correlation.hpp>
#include <pasta/core/detail/thread.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/pipeline.hpp>
#include <pasta/core/detail/scope_registry.hpp>
#include <pasta/nv/detail/activity.hpp>
#include <pasta/nv/detail/cupti_api.hpp>
#include <pasta/nv/detail/pc_sampling.hpp>
#include <pasta/nv/detail/range_counters.hpp>

namespace pasta::nv {

class Cupti {
 public:
  static constexpr std::string_view name = "cupti";
  // CUDA allows one tools subscriber per process; core/handlers.hpp checks it.
  static constexpr std::string_view cuda_tools_subscriber = "CUPTI";
  static constexpr std::size_t buffer_bytes = 8u << 20;
  static constexpr std::size_t max_buffers = 64;  // at most 512 MiB of records in flight
  static constexpr auto min_flush_gap = std::chrono::milliseconds(100);

  struct Stats {
    std::atomic<std::uint64_t> records{0};    // activity records processed
    std::atomic<std::uint64_t> dropped{0};    // records CUPTI reports it dropped
    std::atomic<std::uint64_t> refused{0};    // buffers refused at the limit
    std::atomic<std::uint64_t> buffers{0};    // buffers processed
    std::atomic<std::uint64_t> callbacks{0};  // API callbacks handled
    std::atomic<std::uint64_t> flushes{0};    // flushes pasta asked CUPTI for while running
    std::atomic<std::uint64_t> flush_ns{0};   // time spent in them
  };

  explicit Cupti(const Config& cfg)
      : launch_callbacks_(cfg.launch_callbacks),
        verbose_(cfg.verbose),
        flush_period_(cfg.flush_ms),
        flush_on_sync_(cfg.flush_on_sync),
        op_tags_(cfg.op_tags) {
    counters_.set_per_signature(cfg.counter_launches);
    counters_.set_flush_cache(cfg.counter_cache_flush);
    counters_.set_user_replay(cfg.counter_user_replay);
    counters_.set_verbose(cfg.verbose);
    sampler_.set_period(cfg.pc_sampling_period);
    // The program's NVTX ranges reach CUPTI only if NVTX loads CUPTI as its
    // injection, and NVTX reads this when it initialises: set it now, before
    // the profiler's first scope initialises NVTX.
    parse_skip(std::getenv("PASTA_CUPTI_SKIP"));
    if (!skipped(skip_nvtx) && !std::getenv("NVTX_INJECTION64_PATH")) {
      Dl_info info{};
      if (::dladdr(reinterpret_cast<void*>(&cuptiGetTimestamp), &info) && info.dli_fname)
        ::setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
    }
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
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    drain();
  }

  bool active() const { return active_; }
  const Stats& stats() const { return stats_; }
  // Why the reports may miss events; empty when nothing was lost.
  std::string partial_reason() const {
    if (!error_.empty()) return error_;
    if (!counters_.error().empty()) return counters_.error();
    if (!counters_.flush_error().empty()) return counters_.flush_error();
    if (!sampler_.error().empty()) return sampler_.error();
    if (sampler_.dropped() || sampler_.buffer_full())
      return fmt::format("PC sampling dropped {} of {} samples{}", sampler_.dropped(),
                         sampler_.samples(),
                         sampler_.buffer_full() ? " (its hardware buffer filled up; raise "
                                                  "PASTA_PC_SAMPLING_PERIOD)"
                                                : "");
    const auto dropped = stats_.dropped.load(), refused = stats_.refused.load();
    if (!dropped && !refused) return {};
    return fmt::format("CUPTI dropped {} activity records ({} buffers refused at the {} MiB limit)",
                       dropped, refused, max_buffers * buffer_bytes >> 20);
  }

 private:
  template <class Sink>
  static void CUPTIAPI on_callback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const void* data);
  template <class Sink>
  static void process_buffer(Cupti* self, std::uint8_t* buffer, std::size_t valid);
  static void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                        std::size_t* max_records);
  static void CUPTIAPI buffer_completed(CUcontext ctx, std::uint32_t stream, std::uint8_t* buffer,
                                        std::size_t size, std::size_t valid);
  static std::uint64_t cupti_clock() {
    std::uint64_t t = 0;
    cuptiGetTimestamp(&t);
    return t;
  }
  static std::atomic<Cupti*>& current() {
    static std::atomic<Cupti*> c{nullptr};
    return c;
  }
  // Operator sources (torch::Aten) tag the calling thread's CUDA work with
  // the operator through CUPTI's external correlation ids, the kind
  // PyTorch's own profiler leaves free.
  static constexpr auto op_kind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
  static void op_enter(std::uint64_t op, NameId name) {
    cuptiActivityPushExternalCorrelationId(op_kind, op);
    auto& paths = op_paths();
    paths.push_back(pasta::detail::fnv_step(
        paths.empty() ? pasta::detail::fnv_offset : paths.back(), name.value + 1ull));
  }
  static void op_exit() {
    std::uint64_t last = 0;
    cuptiActivityPopExternalCorrelationId(op_kind, &last);
    if (auto& paths = op_paths(); !paths.empty()) paths.pop_back();
  }
  // The calling thread's operator path, one hash a level (signatures of the
  // launches counters measure).
  static std::vector<std::uint64_t>& op_paths() {
    thread_local std::vector<std::uint64_t> paths;
    return paths;
  }
  static constexpr pasta::detail::OpCorrelator op_hooks{&op_enter, &op_exit};

  // The correlation ids of pasta's own API calls during replays, so their
  // activity records (the relaunched kernels, the memory copies) are dropped.
  class OwnCalls {
   public:
    void add(std::uint32_t id) {
      std::lock_guard lock(mutex_);
      ids_.insert(id);
      size_.store(ids_.size(), std::memory_order_release);
    }
    bool take(std::uint32_t id) {
      if (size_.load(std::memory_order_acquire) == 0) return false;
      std::lock_guard lock(mutex_);
      const bool own = ids_.erase(id) > 0;
      size_.store(ids_.size(), std::memory_order_release);
      return own;
    }

   private:
    std::mutex mutex_;
    std::unordered_set<std::uint32_t> ids_;
    std::atomic<std::size_t> size_{0};
  };
  // Inside a launch that RangeCounters::before saw: after() is owed.
  static bool& counting() {
    thread_local bool on = false;
    return on;
  }
  static constexpr std::array<CUpti_CallbackId, 6> runtime_launches{
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000};
  static constexpr std::array<CUpti_CallbackId, 6> driver_launches{
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};
  static bool is_launch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
      return std::ranges::find(runtime_launches, cbid) != runtime_launches.end();
    return domain == CUPTI_CB_DOMAIN_DRIVER_API &&
           std::ranges::find(driver_launches, cbid) != driver_launches.end();
  }
  void enable_launch_callbacks() {
    for (CUpti_CallbackId id : runtime_launches)
      check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, id),
            "a runtime launch callback");
    for (CUpti_CallbackId id : driver_launches)
      check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id),
            "a driver launch callback");
  }
  // GPU work that is not a launch before() sees (copies, memsets, graphs,
  // old-style launches): while counters are measured, profiling stops before
  // it, so that it is no range of its own. Found by name among CUPTI's
  // runtime and driver callbacks.
  void enable_interrupt_callbacks() {
    // A capture's begin too: profiling must stop before it (stopping
    // synchronises, which would end the capture in error).
    static constexpr std::array<std::string_view, 11> prefixes{
        "cudaMemcpy",
        "cudaMemset",
        "cudaGraphLaunch",
        "cudaStreamBeginCapture",
        "cuStreamBeginCapture",
        "cudaLaunchCooperativeKernelMultiDevice",
        "cuMemcpy",
        "cuMemset",
        "cuGraphLaunch",
        "cuLaunchGrid",
        "cuLaunchCooperativeKernelMultiDevice"};
    for (auto [domain, size] :
         {std::pair{CUPTI_CB_DOMAIN_RUNTIME_API, std::uint32_t{CUPTI_RUNTIME_TRACE_CBID_SIZE}},
          std::pair{CUPTI_CB_DOMAIN_DRIVER_API, std::uint32_t{CUPTI_DRIVER_TRACE_CBID_SIZE}}}) {
      for (CUpti_CallbackId id = 1; id < size; ++id) {
        const char* name = nullptr;
        if (cuptiGetCallbackName(domain, id, &name) != CUPTI_SUCCESS || !name) continue;
        const std::string_view n(name);
        if (std::ranges::none_of(prefixes, [&](std::string_view p) { return n.starts_with(p); }))
          continue;
        if (cuptiEnableCallback(1, subscriber_, domain, id) == CUPTI_SUCCESS)
          interrupts_.set(domain, id,
                          n.find("Memset") != n.npos   ? 'x'
                          : n.find("Memcpy") != n.npos ? 'y'
                                                       : 'g');
      }
    }
  }

  // The allocation calls (detail::memory_calls), for user replay.
  void enable_memory_callbacks() {
    for (const auto& m : detail::memory_calls)
      if (check(cuptiEnableCallback(1, subscriber_, m.domain, m.cbid), "an allocation callback"))
        memory_calls_.set(m.domain, m.cbid, m.call);
  }
  void track(const detail::MemoryChange& c) {
    switch (c.kind) {
      case detail::MemoryChange::added:
        counters_.allocated(c.base, c.bytes);
        break;
      case detail::MemoryChange::removed:
        counters_.freed(c.base);
        break;
      case detail::MemoryChange::unmapped:
        counters_.unmapped(c.base, c.bytes);
        break;
    }
  }
  // How a driver launch callback's parameters relaunch the kernel.
  static std::optional<detail::RangeCounters::Call> driver_call(CUpti_CallbackId cbid) {
    using Call = detail::RangeCounters::Call;
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

  void enable_sync_callbacks() {
    check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API,
                              CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020),
          "the cudaDeviceSynchronize callback");
    check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API,
                              CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize),
          "the cuCtxSynchronize callback");
  }

  static int& runtime_depth() {  // inside a runtime launch: skip the driver launch under it
    thread_local int depth = 0;
    return depth;
  }

  bool check(CUptiResult r, std::string_view what) {
    if (r == CUPTI_SUCCESS) return true;
    pasta::detail::log_once(fmt::format("cupti:{}", what),
                            fmt::format("CUPTI: {} failed: {}", what, detail::cupti_error(r)));
    return false;
  }
  void enable_activity(CUpti_ActivityKind kind, std::string_view what) {
    if (check(cuptiActivityEnable(kind), fmt::format("enabling {} records", what)))
      enabled_kinds_[enabled_count_++] = kind;
  }
  void request_flush() {
    {
      std::lock_guard lock(worker_mutex_);
      flush_requested_ = true;
    }
    worker_cv_.notify_one();
  }
  // pasta's worker thread: processes the buffers CUPTI completed (outside
  // CUPTI's own locks, so launches never wait for pasta's tools) and asks
  // CUPTI for a flush after a synchronisation (at most every min_flush_gap)
  // and every flush_period.
  void worker_loop() {
    using clock = std::chrono::steady_clock;
    auto last_flush = clock::now();
    std::unique_lock lock(worker_mutex_);
    while (!stopping_) {
      worker_cv_.wait_for(lock, min_flush_gap,  // wakes often enough for both periods
                          [&] { return stopping_ || flush_requested_ || !filled_.empty(); });
      if (stopping_) break;
      std::vector<Filled> work;
      work.swap(filled_);
      const auto now = clock::now();
      const bool flush = (flush_requested_ && now - last_flush >= min_flush_gap) ||
                         (flush_period_.count() && now - last_flush >= flush_period_);
      if (flush) flush_requested_ = false;
      lock.unlock();
      process_all(work);
      if (flush) {
        const auto t0 = clock::now();
        cuptiActivityFlushAll(0);  // completed buffers come back through buffer_completed
        last_flush = clock::now();
        stats_.flushes.fetch_add(1, std::memory_order_relaxed);
        stats_.flush_ns.fetch_add(
            std::chrono::duration_cast<std::chrono::nanoseconds>(last_flush - t0).count(),
            std::memory_order_relaxed);
      }
      lock.lock();
    }
  }
  struct Filled {
    std::uint8_t* buffer;
    std::size_t valid;
  };
  void drain() {
    std::vector<Filled> work;
    {
      std::lock_guard lock(worker_mutex_);
      work.swap(filled_);
    }
    process_all(work);
  }
  void process_all(std::vector<Filled>& work) {
    for (const Filled& f : work) {
      try {
        if (f.valid) process_(this, f.buffer, f.valid);
      } catch (...) {
        pasta::detail::log_once("cupti:buffer", "processing a CUPTI activity buffer failed");
      }
      std::free(f.buffer);
      outstanding_.fetch_sub(1);
      stats_.buffers.fetch_add(1, std::memory_order_relaxed);
    }
    work.clear();
  }
  NameId kernel_name(const char* name) {
    if (!name) return {};
    auto [it, fresh] = kernel_names_.try_emplace(name);
    if (fresh) it->second = intern(name);
    return it->second;
  }
  // A device activity with the operator its launch was tagged with (0 if none).
  template <class E>
  E tagged(E e) const {
    e.op = op_of_.find(static_cast<std::uint32_t>(e.correlation));
    return e;
  }
  std::uint32_t device_of_context(std::uint32_t context) const {
    auto it = context_device_.find(context);
    return it == context_device_.end() ? 0 : it->second;
  }
  // Grid, block, shared memory and stream of a launch callback's call.
  struct LaunchShape {
    Dim3 grid, block;
    std::uint32_t shared = 0;
    CUstream stream = nullptr;
  };
  static std::optional<LaunchShape> launch_shape(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                                 const void* params);
  // A launch API whose stream 0 is the thread's own default stream.
  static bool per_thread_stream(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
      return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 ||
             cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060;
    return cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz;
  }
  // What the counters deduplicate on: kernel, grid, block, operator path.
  static std::uint64_t signature(const CUpti_CallbackData& cb, const LaunchShape& s) {
    std::uint64_t h = std::hash<std::string_view>{}(cb.symbolName ? cb.symbolName : "");
    for (std::uint64_t v :
         {std::uint64_t{s.grid.x}, std::uint64_t{s.grid.y}, std::uint64_t{s.grid.z},
          std::uint64_t{s.block.x}, std::uint64_t{s.block.y}, std::uint64_t{s.block.z},
          op_paths().empty() ? 0 : op_paths().back()})
      h = pasta::detail::fnv_step(h, v);
    return h;
  }
  template <class Sink>
  void emit_launch(Sink& sink, const CUpti_CallbackData& cb, const LaunchShape& s);
  template <class Sink>
  void on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData& d);
  // pasta's own scopes reach the profiler directly; their NVTX ranges are
  // for Nsight only.
  static bool own_domain(nvtxDomainHandle_t domain) {
#ifdef PASTA_DETAIL_NVTX
    return domain == pasta::detail::nvtx_domain();
#else
    (void)domain;
    return false;
#endif
  }

  // PASTA_CUPTI_SKIP: record kinds to leave off even when a tool wants them,
  // to trade detail for overhead (comma list of the names below).
  enum Skip : unsigned {
    skip_memcpy = 1,
    skip_memset = 2,
    skip_sync = 4,
    skip_memory = 8,
    skip_nvtx = 16,
    skip_device = 32
  };
  void parse_skip(const char* list) {
    if (!list || !*list) return;
    std::string_view rest(list);
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      if (item == "memcpy")
        skip_ |= skip_memcpy;
      else if (item == "memset")
        skip_ |= skip_memset;
      else if (item == "sync")
        skip_ |= skip_sync;
      else if (item == "memory")
        skip_ |= skip_memory;
      else if (item == "nvtx")
        skip_ |= skip_nvtx;
      else if (item == "device")
        skip_ |= skip_device;
      else
        pasta::detail::log(fmt::format(
            "PASTA_CUPTI_SKIP: \"{}\" is not a record kind; expected a comma list of memcpy, "
            "memset, sync, memory, nvtx, device; ignored",
            item));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  bool skipped(unsigned what) const { return (skip_ & what) != 0; }

  unsigned skip_ = 0;
  bool launch_callbacks_;
  bool verbose_;
  std::chrono::milliseconds flush_period_;  // 0: flush only when asked and at exit
  bool flush_on_sync_;
  bool op_tags_;                    // Config::op_tags: tag device work with operators
  bool host_launches_ = false;      // KernelLaunch comes from callbacks, not from records
  detail::RangeCounters counters_;  // KernelCounters, when a tool wants them
  // What GPU work a callback is (enable_interrupt_callbacks): 0 none of
  // these, 'x' a memset, 'y' a copy, 'g' other.
  detail::ByCallback<char> interrupts_;
  detail::ByCallback<detail::MemoryCall> memory_calls_;  // enable_memory_callbacks
  OwnCalls own_calls_;
  bool own_records_ = false;  // kernel or copy records on: own_calls_ is kept
  void (*finish_counters_)(Cupti*) = nullptr;
  detail::PcSampler sampler_;  // StallSample, when a tool wants them
  void (*finish_sampling_)(Cupti*) = nullptr;
  bool active_ = false;
  void* sink_ = nullptr;
  void (*process_)(Cupti*, std::uint8_t*, std::size_t) = nullptr;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  CUpti_ActivityKind enabled_kinds_[16] = {};
  int enabled_count_ = 0;
  std::atomic<std::size_t> outstanding_{0};
  Stats stats_;
  std::string error_;
  // Touched only inside the sink's batch, which serialises buffer processing.
  std::unordered_map<const char*, NameId> kernel_names_;
  const NameId l2_flush_name_ = intern("pasta_l2_flush");
  std::unordered_map<std::uint32_t, std::uint32_t> context_device_;
  detail::OpCorrelations op_of_;
  std::thread worker_;
  std::mutex worker_mutex_;  // guards filled_, flush_requested_, stopping_
  std::condition_variable worker_cv_;
  std::vector<Filled> filled_;
  bool flush_requested_ = false, stopping_ = false;
};

template <class Sink>
void Cupti::start(Sink& sink) {
  constexpr bool kernels =
      Sink::template wants<KernelComplete>() || Sink::template wants<KernelLaunch>();
  constexpr bool copies = Sink::template wants<Memcpy>();
  constexpr bool sets = Sink::template wants<Memset>();
  constexpr bool memory = Sink::template wants<MemAlloc>() || Sink::template wants<MemFree>();
  constexpr bool syncs = Sink::template wants<Synchronize>();
  constexpr bool devices = Sink::template wants<DeviceInfo>();
  constexpr bool modules = Sink::template wants<ModuleLoad>();
  constexpr bool scopes = Sink::template wants<ScopeBegin>() || Sink::template wants<ScopeEnd>();
  constexpr bool activities = kernels || copies || sets || memory || syncs || devices;
  // Tools that read operators get the device work tagged with them.
  constexpr bool ops = (kernels || copies || sets) &&
                       (Sink::template wants<OpBegin>() || Sink::template wants<OpEnd>());

  Cupti* expected = nullptr;
  if (!current().compare_exchange_strong(expected, this)) {
    error_ = "a CUPTI handler is already active in this process; this one records nothing";
    pasta::detail::log(error_);
    return;
  }
  sink_ = &sink;
  process_ = &process_buffer<Sink>;
  const CUptiResult sub =
      cuptiSubscribe(&subscriber_, reinterpret_cast<CUpti_CallbackFunc>(&on_callback<Sink>), this);
  if (sub != CUPTI_SUCCESS) {
    error_ = sub == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                 ? "another CUPTI client (Nsight Systems, torch.profiler, compute-sanitizer, ...) "
                   "is attached to this process, and CUPTI takes one: pasta records nothing"
                 : fmt::format("CUPTI: subscribing failed: {}; pasta records nothing",
                               detail::cupti_error(sub));
    pasta::detail::log(error_);
    current() = nullptr;
    return;
  }
  // Synchronisations trigger a flush (on pasta's thread), so tools see the
  // work the program just waited for.
  if (activities && flush_on_sync_) enable_sync_callbacks();
  if constexpr (Sink::template wants<KernelLaunch>()) {
    host_launches_ = launch_callbacks_;
    if (host_launches_) enable_launch_callbacks();
  }
  if constexpr (Sink::template wants<KernelCounters>()) {
    if (!host_launches_) enable_launch_callbacks();
    enable_interrupt_callbacks();
    if (counters_.user_replay()) enable_memory_callbacks();
    own_records_ = kernels || Sink::template wants<Memcpy>();
    counters_.set_kernel_records(activities && kernels);
    finish_counters_ = [](Cupti* self) {
      self->counters_.finish(
          [&](const KernelCounters& c) { static_cast<Sink*>(self->sink_)->emit(c); });
    };
  }
  if constexpr (Sink::template wants<StallSample>()) {
    // Sampling starts at a context's first launch; samples are read after
    // synchronisations, before a module unloads or a context ends, and at stop.
    enable_launch_callbacks();
    enable_sync_callbacks();
    for (CUpti_CallbackId id :
         {CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING})
      check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, id),
            "a resource callback");
    finish_sampling_ = [](Cupti* self) {
      self->sampler_.finish(
          nullptr, [&](const StallSample& e) { static_cast<Sink*>(self->sink_)->emit(e); });
    };
  }
  if constexpr (modules || Sink::template wants<ModuleImage>())
    check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                              CUPTI_CBID_RESOURCE_MODULE_LOADED),
          "the module-load callback");
  if (scopes && !skipped(skip_nvtx))
    check(cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_NVTX), "NVTX callbacks");

  if constexpr (activities) {
    check(cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed),
          "registering activity buffers");
    if constexpr (kernels) enable_activity(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel");
    if (copies && !skipped(skip_memcpy)) {
      enable_activity(CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy");
      enable_activity(CUPTI_ACTIVITY_KIND_MEMCPY2, "peer memcpy");
    }
    if (sets && !skipped(skip_memset)) enable_activity(CUPTI_ACTIVITY_KIND_MEMSET, "memset");
    if (memory && !skipped(skip_memory)) enable_activity(CUPTI_ACTIVITY_KIND_MEMORY2, "allocation");
    if (syncs && !skipped(skip_sync)) {
      enable_activity(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronization");
      enable_activity(CUPTI_ACTIVITY_KIND_CONTEXT, "context");
    }
    if (devices && !skipped(skip_device)) enable_activity(CUPTI_ACTIVITY_KIND_DEVICE, "device");
    if (ops && op_tags_) {
      // CUPTI writes an external correlation record only in front of an API
      // record, so runtime and driver API records are on too (measured on
      // the H100: without them no kernel was tagged; cuDNN and cuBLAS launch
      // through the driver API). They are read for nothing else, and are
      // most of what tagging costs (docs/benchmarks.md; PASTA_OP_TAGS=0).
      enable_activity(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "external correlation");
      enable_activity(CUPTI_ACTIVITY_KIND_RUNTIME, "runtime API");
      enable_activity(CUPTI_ACTIVITY_KIND_DRIVER, "driver API");
      pasta::detail::op_correlator().store(&op_hooks, std::memory_order_release);
    }
    worker_ = std::thread([this] { worker_loop(); });
  }
  // Host events (scopes) share CUPTI's clock, so timelines line up.
  pasta::detail::set_clock(&cupti_clock);
  active_ = true;
  if (verbose_) {
    Dl_info info{};
    ::dladdr(reinterpret_cast<void*>(&cuptiGetTimestamp), &info);
    pasta::detail::log(fmt::format(
        "cupti handler: {} from {}; {} activity kinds; launch callbacks {}; NVTX {}; "
        "NVTX_INJECTION64_PATH={}",
        activities ? "activity records" : "no activity records",
        info.dli_fname ? info.dli_fname : "?", enabled_count_, host_launches_ ? "on" : "off",
        scopes ? "on" : "off",
        std::getenv("NVTX_INJECTION64_PATH") ? std::getenv("NVTX_INJECTION64_PATH") : "unset"));
  }
}

inline void Cupti::stop() {
  if (!active_) return;
  active_ = false;
  if (finish_counters_) {
    finish_counters_(this);
    const bool unmeasured = counters_.unsaved() || counters_.unreplayed();
    if (counters_.user_replay() && (verbose_ || unmeasured))
      pasta::detail::log(fmt::format(
          "cupti handler: hardware counters by user replay: {} launches replayed by pasta, "
          "{:.2f} GiB of device memory saved per launch on average ({} allocations known at the "
          "end), L2 flushed before {} passes; not measured: {} (no room to save memory), {} "
          "(no driver launch call seen)",
          counters_.measured(),
          counters_.measured() ? static_cast<double>(counters_.replayed_bytes()) /
                                     static_cast<double>(counters_.measured()) / (1ull << 30)
                               : 0.0,
          counters_.allocations(), counters_.flushes(), counters_.unsaved(),
          counters_.unreplayed()));
    if (counters_.captured())
      pasta::detail::log(fmt::format(
          "cupti handler: hardware counters: {} launches captured into CUDA graphs were not "
          "measured, nor are the kernels the graphs run",
          counters_.captured()));
    if (verbose_ || counters_.mismatched() || counters_.other_context())
      pasta::detail::log(fmt::format(
          "cupti handler: hardware counters of {} launches ({} replay passes each), {} launches "
          "measured again in one pass for {} (L2 flushed before {}), {} "
          "launches left to the measured mean of their signature; {} "
          "launches on another context and {} whose ranges did not match launches were not "
          "measured; {} ranges more than launches; profiling stopped {} times for copies, memsets "
          "or graphs; {} launches profiled in one pass and passed over; {} launches to measure in "
          "one pass left for their signature's next launch",
          counters_.measured(), counters_.passes(), counters_.remeasured(),
          counters_.cache_metrics(), counters_.flushes(), counters_.skipped(),
          counters_.other_context(), counters_.mismatched(), counters_.extra_ranges(),
          counters_.interrupts(), counters_.passed_over(), counters_.waited()));
    if (verbose_) {
      pasta::detail::log("cupti handler: hardware counters time: " + counters_.timing());
      pasta::detail::log("cupti handler: hardware counters, launch by launch: " +
                         counters_.sequence());
    }
  }
  if (finish_sampling_) {
    finish_sampling_(this);
    if (verbose_ || !sampler_.error().empty() || sampler_.dropped())
      pasta::detail::log(fmt::format(
          "cupti handler: PC sampling: {} samples ({} dropped, {} in kernels CUPTI does not "
          "attribute), {} pc records, {} stall reasons",
          sampler_.samples(), sampler_.dropped(), sampler_.non_user(), sampler_.records(),
          sampler_.reasons()));
  }
  const pasta::detail::OpCorrelator* ours = &op_hooks;
  pasta::detail::op_correlator().compare_exchange_strong(ours, nullptr);
  if (worker_.joinable()) {
    {
      std::lock_guard lock(worker_mutex_);
      stopping_ = true;
    }
    worker_cv_.notify_one();
    worker_.join();
  }
  // The last records: CUPTI hands every buffer back, then this thread
  // processes what the worker did not.
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  drain();
  if (verbose_)
    pasta::detail::log(fmt::format(
        "cupti handler: {} records in {} buffers, {} dropped, {} buffers refused, {} callbacks, "
        "{} flushes taking {:.1f} ms",
        stats_.records.load(), stats_.buffers.load(), stats_.dropped.load(), stats_.refused.load(),
        stats_.callbacks.load(), stats_.flushes.load(), stats_.flush_ns.load() / 1e6));
  for (int i = 0; i < enabled_count_; ++i) cuptiActivityDisable(enabled_kinds_[i]);
  enabled_count_ = 0;
  cuptiUnsubscribe(subscriber_);
  subscriber_ = nullptr;
  pasta::detail::set_clock(nullptr);
  current() = nullptr;
}

template <class Sink>
void Cupti::emit_launch(Sink& sink, const CUpti_CallbackData& cb, const LaunchShape& s) {
  std::uint32_t stream_id = 0, device = 0;
  cuptiGetStreamId(cb.context, s.stream, &stream_id);
  cuptiGetDeviceId(cb.context, &device);
  sink.emit(KernelLaunch{.correlation = cb.correlationId,
                         .context = cb.contextUid,
                         .stream = stream_id,
                         .device = device,
                         .name = cb.symbolName ? intern(cb.symbolName) : NameId{},
                         .grid = s.grid,
                         .block = s.block,
                         .shared_mem_bytes = s.shared,
                         .thread = pasta::detail::thread_id(),
                         .time_ns = cupti_clock()});
}

inline std::optional<Cupti::LaunchShape> Cupti::launch_shape(CUpti_CallbackDomain domain,
                                                             CUpti_CallbackId cbid,
                                                             const void* params) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
        // The cooperative launch's parameters have the same layout.
        const auto* p = static_cast<const detail::RuntimeLaunchParams*>(params);
        return LaunchShape{{p->gridDim.x, p->gridDim.y, p->gridDim.z},
                           {p->blockDim.x, p->blockDim.y, p->blockDim.z},
                           static_cast<std::uint32_t>(p->sharedMem),
                           reinterpret_cast<CUstream>(p->stream)};
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
        const auto* c = static_cast<const detail::RuntimeLaunchExParams*>(params)->config;
        return LaunchShape{{c->gridDim.x, c->gridDim.y, c->gridDim.z},
                           {c->blockDim.x, c->blockDim.y, c->blockDim.z},
                           static_cast<std::uint32_t>(c->dynamicSmemBytes),
                           reinterpret_cast<CUstream>(c->stream)};
      }
      default:
        return std::nullopt;
    }
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return std::nullopt;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      const auto* p = static_cast<const detail::DriverLaunchParams*>(params);
      return LaunchShape{{p->gridDimX, p->gridDimY, p->gridDimZ},
                         {p->blockDimX, p->blockDimY, p->blockDimZ},
                         p->sharedMemBytes,
                         p->hStream};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto* c = static_cast<const detail::DriverLaunchExParams*>(params)->config;
      return LaunchShape{{c->gridDimX, c->gridDimY, c->gridDimZ},
                         {c->blockDimX, c->blockDimY, c->blockDimZ},
                         c->sharedMemBytes,
                         c->hStream};
    }
    default:
      return std::nullopt;
  }
}

template <class Sink>
void Cupti::on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData& d) {
  auto range_name = [](const nvtxEventAttributes_t* a) -> NameId {
    if (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii)
      return intern(a->message.ascii);
    return intern("(unnamed NVTX range)");
  };
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA: {
      const auto* p = static_cast<const nvtxRangePushA_params*>(d.functionParams);
      pasta::detail::scope_enter(intern(p->message ? p->message : "(unnamed NVTX range)"), false);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      pasta::detail::scope_enter(
          range_name(static_cast<const nvtxRangePushEx_params*>(d.functionParams)->eventAttrib),
          false);
      break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
      pasta::detail::scope_exit(false);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      const auto* p = static_cast<const nvtxDomainRangePushEx_params*>(d.functionParams);
      if (!own_domain(p->domain))
        pasta::detail::scope_enter(range_name(p->core.eventAttrib), false);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePop: {
      const auto* p = static_cast<const nvtxDomainRangePop_params*>(d.functionParams);
      if (!own_domain(p->domain)) pasta::detail::scope_exit(false);
      break;
    }
    default:
      break;
  }
}

template <class Sink>
void CUPTIAPI Cupti::on_callback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void* data) {
  auto* self = static_cast<Cupti*>(user);
  if constexpr (Sink::template wants<KernelCounters>()) {
    if (detail::RangeCounters::replaying()) {  // a replay's own thread: pasta's calls
      // Only kernel and copy records are read (and so taken from the set).
      if (self->own_records_ &&
          (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) &&
          static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_ENTER)
        self->own_calls_.add(static_cast<const CUpti_CallbackData*>(data)->correlationId);
      return;
    }
    // The launch measured: its range is in, perhaps time to decode (even
    // while stopping: before() holds the counters until this after()).
    if (counting() && !pasta::detail::inside_dispatch() && is_launch(domain, cbid) &&
        static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_EXIT &&
        runtime_depth() == (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 1 : 0)) {
      counting() = false;
      self->counters_.after(
          [&](const KernelCounters& c) { static_cast<Sink*>(self->sink_)->emit(c); });
    }
  }
  if (pasta::detail::inside_dispatch() || !self->active_) return;  // pasta's own device work
  Sink& sink = *static_cast<Sink*>(self->sink_);
  try {
    if constexpr (Sink::template wants<KernelCounters>()) {
      if (const auto call = self->memory_calls_(domain, cbid); call != detail::MemoryCall::none) {
        // The program's allocations, for user replay to save.
        const auto& cb = *static_cast<const CUpti_CallbackData*>(data);
        if (cb.callbackSite == CUPTI_API_EXIT && cb.functionReturnValue &&
            *static_cast<const int*>(cb.functionReturnValue) == 0)
          if (const auto change = detail::memory_change(call, cb.functionParams))
            self->track(*change);
        return;
      }
      if (const char kind = self->interrupts_(domain, cbid)) {
        // Only counters asked for these callbacks.
        if (static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_ENTER &&
            !counting())
          self->counters_.interrupt(
              [&](const KernelCounters& c) { static_cast<Sink*>(self->sink_)->emit(c); }, kind);
        return;
      }
      const auto& cb = *static_cast<const CUpti_CallbackData*>(data);
      // The outermost launch call: a runtime launch, or a driver launch outside one.
      if (is_launch(domain, cbid) && cb.callbackSite == CUPTI_API_ENTER && !counting() &&
          runtime_depth() == 0) {
        counting() = true;
        const auto shape = launch_shape(domain, cbid, cb.functionParams);
        CUstream stream = shape ? shape->stream : nullptr;
        if (!stream && per_thread_stream(domain, cbid)) stream = CU_STREAM_PER_THREAD;
        self->counters_.before(
            cb.context, stream, cb.correlationId, shape ? signature(cb, *shape) : 0,
            [&](const KernelCounters& c) { static_cast<Sink*>(self->sink_)->emit(c); });
      }
      // The driver's launch call under it (or the same call): pasta replays
      // the kernel here, before the call runs, if before() chose it.
      if (counting() && domain == CUPTI_CB_DOMAIN_DRIVER_API &&
          cb.callbackSite == CUPTI_API_ENTER && self->counters_.owes())
        if (const auto call = driver_call(cbid))
          self->counters_.replay({*call, cb.functionParams}, [&](const KernelCounters& c) {
            static_cast<Sink*>(self->sink_)->emit(c);
          });
    }
    if constexpr (Sink::template wants<StallSample>()) {
      auto emit = [&](const StallSample& e) { sink.emit(e); };
      if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        const auto& r = *static_cast<const CUpti_ResourceData*>(data);
        if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
          self->sampler_.finish(r.context, emit);
        if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) self->sampler_.collect(emit);
      } else if (domain != CUPTI_CB_DOMAIN_NVTX) {
        const auto& cb = *static_cast<const CUpti_CallbackData*>(data);
        if (!is_launch(domain, cbid)) {
          if (cb.callbackSite == CUPTI_API_EXIT) self->sampler_.collect(emit);
        } else if (cb.callbackSite == CUPTI_API_ENTER) {
          self->sampler_.enable(cb.context);
        }
      }
    }
    self->stats_.callbacks.fetch_add(1, std::memory_order_relaxed);
    if (domain == CUPTI_CB_DOMAIN_NVTX) {
      self->on_nvtx<Sink>(cbid, *static_cast<const CUpti_NvtxData*>(data));
      return;
    }
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
      if (cbid != CUPTI_CBID_RESOURCE_MODULE_LOADED) return;
      const auto& r = *static_cast<const CUpti_ResourceData*>(data);
      const auto* m = static_cast<const CUpti_ModuleResourceData*>(r.resourceDescriptor);
      std::uint32_t device = 0;
      cuptiGetDeviceId(r.context, &device);
      if constexpr (Sink::template wants<ModuleLoad>())
        sink.emit(ModuleLoad{.device = device,
                             .module = m ? m->moduleId : 0,
                             .image_bytes = m ? m->cubinSize : 0,
                             .time_ns = cupti_clock()});
      if constexpr (Sink::template wants<ModuleImage>())
        if (m && m->pCubin && m->cubinSize)
          sink.emit(ModuleImage{.device = device,
                                .module = m->moduleId,
                                .image = reinterpret_cast<const std::byte*>(m->pCubin),
                                .image_bytes = m->cubinSize});
      return;
    }
    const auto& cb = *static_cast<const CUpti_CallbackData*>(data);
    const bool enter = cb.callbackSite == CUPTI_API_ENTER;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
      if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020) {
        if (!enter && self->flush_on_sync_) self->request_flush();
        return;
      }
      runtime_depth() += enter ? 1 : -1;
      if (!enter || !self->host_launches_) return;
      if constexpr (Sink::template wants<KernelLaunch>())
        if (const auto shape = launch_shape(domain, cbid, cb.functionParams))
          self->emit_launch(sink, cb, *shape);
      return;
    }
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
      if (cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize) {
        if (!enter && self->flush_on_sync_) self->request_flush();
        return;
      }
      if (!enter || runtime_depth() > 0 || !self->host_launches_)
        return;  // the runtime launch was reported
      if constexpr (Sink::template wants<KernelLaunch>())
        if (const auto shape = launch_shape(domain, cbid, cb.functionParams))
          self->emit_launch(sink, cb, *shape);
    }
  } catch (const std::exception& e) {
    pasta::detail::log_once("cupti:callback", fmt::format("a CUPTI callback failed: {}", e.what()));
  } catch (...) {
  }
}

template <class Sink>
void Cupti::process_buffer(Cupti* self, std::uint8_t* buffer, std::size_t valid) {
  Sink& sink = *static_cast<Sink*>(self->sink_);
  sink.batch([&](auto& s) {
    CUpti_Activity* record = nullptr;
    std::uint64_t n = 0;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      ++n;
      switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
          const auto& k = *reinterpret_cast<const CUpti_ActivityKernel10*>(record);
          if (self->own_calls_.take(k.correlationId)) break;  // a replay pass
          const NameId name = self->kernel_name(k.name);
          if (name == self->l2_flush_name_) break;  // pasta's own (hardware counters)
          self->context_device_[k.contextId] = k.deviceId;
          if constexpr (Sink::template wants<KernelLaunch>())
            if (!self->host_launches_) s.emit(detail::kernel_launch(k, name));
          if constexpr (Sink::template wants<KernelComplete>())
            s.emit(self->tagged(detail::kernel_complete(k, name)));
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
          const auto& m = *reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
          if (self->own_calls_.take(m.correlationId)) break;  // a replay's save or restore
          if constexpr (Sink::template wants<Memcpy>()) s.emit(self->tagged(detail::memcpy_of(m)));
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY2:
          if constexpr (Sink::template wants<Memcpy>())
            s.emit(self->tagged(
                detail::memcpy_of(*reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record))));
          break;
        case CUPTI_ACTIVITY_KIND_MEMSET:
          if constexpr (Sink::template wants<Memset>())
            s.emit(self->tagged(
                detail::memset_of(*reinterpret_cast<const CUpti_ActivityMemset4*>(record))));
          break;
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
          const auto& x = *reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
          if (x.externalKind == op_kind) self->op_of_.add(x.correlationId, x.externalId);
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMORY2: {
          const auto& m = *reinterpret_cast<const CUpti_ActivityMemory4*>(record);
          if (detail::is_allocation(m)) {
            if constexpr (Sink::template wants<MemAlloc>()) s.emit(detail::mem_alloc(m));
          } else {
            if constexpr (Sink::template wants<MemFree>()) s.emit(detail::mem_free(m));
          }
          break;
        }
        case CUPTI_ACTIVITY_KIND_CONTEXT: {
          const auto& c = *reinterpret_cast<const CUpti_ActivityContext3*>(record);
          self->context_device_[c.contextId] = c.deviceId;
          break;
        }
        case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
          if constexpr (Sink::template wants<Synchronize>()) {
            const auto& y = *reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
            s.emit(detail::synchronize_of(y, self->device_of_context(y.contextId)));
          }
          break;
        case CUPTI_ACTIVITY_KIND_DEVICE:
          if constexpr (Sink::template wants<DeviceInfo>()) {
            const auto& d = *reinterpret_cast<const CUpti_ActivityDevice5*>(record);
            s.emit(detail::device_info(d, intern(d.name ? d.name : "")));
          }
          break;
        default:
          break;
      }
    }
    self->stats_.records.fetch_add(n, std::memory_order_relaxed);
  });
}

inline void CUPTIAPI Cupti::buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                             std::size_t* max_records) {
  *max_records = 0;
  Cupti* self = current().load();
  if (!self || self->outstanding_.load() >= max_buffers) {
    *buffer = nullptr;
    *size = 0;
    if (self) self->stats_.refused.fetch_add(1);
    return;
  }
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, buffer_bytes));
  *size = *buffer ? buffer_bytes : 0;
  if (*buffer) self->outstanding_.fetch_add(1);
}

inline void CUPTIAPI Cupti::buffer_completed(CUcontext ctx, std::uint32_t stream,
                                             std::uint8_t* buffer, std::size_t, std::size_t valid) {
  Cupti* self = current().load();
  if (!self || !buffer) {
    std::free(buffer);
    return;
  }
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
    self->stats_.dropped.fetch_add(dropped);
  // Queued, not processed here: CUPTI may hold its locks while it calls us.
  {
    std::lock_guard lock(self->worker_mutex_);
    self->filled_.push_back({buffer, valid});
  }
  self->worker_cv_.notify_one();
}

}  // namespace pasta::nv
