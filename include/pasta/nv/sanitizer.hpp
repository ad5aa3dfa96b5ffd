// pasta::nv::Sanitizer: the Compute Sanitizer API handler. Launches,
// allocations (device, managed, pinned host, pool), copies, memsets,
// synchronisations and module loads come from its callbacks; memory accesses
// of the kernels the user selected come from device patches (kernels/):
//   * a pipeline whose processor wants AccessHistogram (proc::GpuBucketing)
//     gets per-page counters reduced on the device, compacted by a CUB
//     post-pass, and only the non-empty pages copied back;
//   * one whose processor wants MemAccess (proc::Cpu) gets every access as
//     a 16-byte record through a device buffer, reduced on the host.
// Modules are patched at the first selected launch of one of their kernels,
// and never when no tool consumes memory accesses.
//
// CUPTI and the Sanitizer API cannot share a process (docs/user-guide.md):
// a pipeline naming both does not compile, and a CUPTI client attached first
// (Nsight, torch.profiler) silences the Sanitizer API, which pasta reports.
#pragma once

#include <cuda.h>
#include <sanitizer.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/thread.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/kernel_selector.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/pipeline.hpp>
#include <pasta/core/report.hpp>
#include <pasta/nv/detail/cubin.hpp>
#include <pasta/nv/detail/sanitizer_device.hpp>

namespace pasta::nv {

class Sanitizer {
 public:
  static constexpr std::string_view name = "sanitizer";
  // CUDA allows one tools subscriber per process; core/handlers.hpp checks it.
  static constexpr std::string_view cuda_tools_subscriber = "Compute Sanitizer API";

  enum class Mode : std::uint8_t { none, histogram, trace };

  struct Stats {
    std::atomic<std::uint64_t> launches{0}, instrumented{0}, modules_patched{0}, modules_skipped{0};
    std::atomic<std::uint64_t> patch_ns{0}, post_ns{0}, copy_bytes{0};
    std::atomic<std::uint64_t> records{0}, records_lost{0}, overflowed_launches{0};
    std::atomic<std::uint64_t> bins{0}, graph_kernels{0};
  };

  explicit Sanitizer(const Config& cfg)
      : cfg_(cfg),
        selector_(cfg),
        page_shift_(std::countr_zero(std::bit_floor(std::max<std::uint64_t>(cfg.page_bytes, 1)))) {}
  ~Sanitizer() { stop(); }
  Sanitizer(const Sanitizer&) = delete;
  Sanitizer& operator=(const Sanitizer&) = delete;

  template <class Sink>
  void start(Sink& sink);
  void stop();
  void flush() {}  // events are delivered as they happen

  bool active() const { return active_; }
  Mode mode() const { return mode_; }
  const Stats& stats() const { return stats_; }

  std::string partial_reason() const {
    std::string why = error_;
    if (auto lost = stats_.records_lost.load())
      why += fmt::format(
          "{}the device trace buffer ({} MiB) filled in {} launches and {} access records were "
          "lost; raise PASTA_TRACE_BUFFER",
          why.empty() ? "" : "; ", cfg_.trace_buffer_bytes >> 20, stats_.overflowed_launches.load(),
          lost);
    return why;
  }

  void report(Report& out) const {
    out.summary("device patch", patch_name());
    out.summary("kernel launches", stats_.launches.load());
    out.summary("launches instrumented", stats_.instrumented.load());
    out.summary("modules patched", stats_.modules_patched.load());
    if (stats_.modules_skipped.load())
      out.summary("modules left unpatched (no kernel passes the filter)",
                  stats_.modules_skipped.load());
    out.summary("patching time (ms)", stats_.patch_ns.load() / 1e6);
    out.summary("post-pass and copy time (ms)", stats_.post_ns.load() / 1e6);
    out.summary("bytes copied to the host", stats_.copy_bytes.load());
    if (mode_ == Mode::histogram) out.summary("histogram bins copied", stats_.bins.load());
    if (mode_ == Mode::trace) {
      out.summary("access records", stats_.records.load());
      out.summary("access records lost (buffer full)", stats_.records_lost.load());
      out.summary("trace buffer (bytes)", cfg_.trace_buffer_bytes);
    }
    if (stats_.graph_kernels.load())
      out.summary("graph kernel launches (run uninstrumented)", stats_.graph_kernels.load());
    if (!error_.empty()) out.summary("error", error_);
  }

 private:
  struct Launch {  // the launch this thread is inside, from BEGIN to END
    std::uint64_t correlation = 0;
    NameId name{};
    std::uint32_t device = 0;
    Dim3 grid{}, block{};
    detail::ContextState* ctx = nullptr;  // set when instrumented
  };
  // The Sanitizer API's functions, loaded at the first start() (detail/sanitizer_api.hpp).
  static const detail::SanitizerApi& api() { return detail::sanitizer_api(); }
  static Launch& this_launch() {
    thread_local Launch l;
    return l;
  }
  // pasta's own CUDA work (post-pass, module load) on this thread: ignored.
  static int& own_work() {
    thread_local int depth = 0;
    return depth;
  }
  struct OwnWork {
    OwnWork() { ++own_work(); }
    ~OwnWork() { --own_work(); }
  };

  template <class Sink>
  static void SANITIZERAPI on_callback(void* user, Sanitizer_CallbackDomain domain,
                                       Sanitizer_CallbackId cbid, const void* data);
  template <class Sink>
  void on_resource(Sink& sink, Sanitizer_CallbackId cbid, const void* data);
  template <class Sink>
  void launch_begin(Sink& sink, const Sanitizer_LaunchData& d);
  template <class Sink>
  void launch_end(Sink& sink, const Sanitizer_LaunchData& d);
  template <class Sink>
  void collect_histogram(Sink& sink, const Sanitizer_LaunchData& d, const Launch& l);
  template <class Sink>
  void collect_trace(Sink& sink, const Sanitizer_LaunchData& d, const Launch& l);

  void patch_module(detail::ContextState& c, CUmodule module);
  // Whether a loading module has a kernel the filter keeps. A module it
  // leaves unpatched runs at native speed; its patches would cost every
  // launch of it even with the callback data off. Unreadable: patched.
  bool wanted(const Sanitizer_ResourceModuleData& m) {
    std::lock_guard lock(select_mutex_);
    if (!selector_.filters_names() || !m.pCubin) return true;
    bool any = false;
    const bool read = detail::for_each_kernel(
        std::span(reinterpret_cast<const std::byte*>(m.pCubin), m.cubinSize),
        [&](std::string_view name) { any = any || selector_.matches(std::string(name)); });
    if (!any && read) stats_.modules_skipped.fetch_add(1, std::memory_order_relaxed);
    return any || !read;
  }
  void prepare_launch(detail::ContextState& c, const Sanitizer_LaunchData& d);
  // Loads the post-pass into the context, outside any launch (see
  // CONTEXT_CREATION_FINISHED); a failure stops the instrumentation.
  void prepare_post_pass(detail::ContextState& c) {
    std::lock_guard lock(patch_mutex_);
    if (c.compact) return;
    OwnWork own;
    const detail::Driver& driver = detail::loaded_driver();
    CUcontext previous = nullptr;
    detail::check(driver.push(c.ctx), "entering a new context");
    try {
      detail::load_post_pass(c);
    } catch (...) {
      driver.pop(&previous);
      throw;
    }
    driver.pop(&previous);
  }
  detail::ContextState& context(CUcontext ctx) {
    std::lock_guard lock(contexts_mutex_);
    auto& c = contexts_[ctx];
    if (!c) {
      c = std::make_unique<detail::ContextState>();
      c->ctx = ctx;
    }
    return *c;
  }
  std::string_view patch_name() const {
    if (mode_ == Mode::none) return "none (no tool consumes memory accesses)";
    return patch_family();
  }
  // The patch functions' prefix in kernels/access_patches.cu.
  std::string_view patch_family() const {
    switch (cfg_.access_patch) {
      case AccessPatch::noop:
        return "noop";
      case AccessPatch::atomic:
        return "atomic";
      case AccessPatch::object_atomic:
        return "object_atomic";
      case AccessPatch::automatic:
        break;
    }
    return mode_ == Mode::trace ? "trace" : "bucket";
  }
  void fail(std::string why) {
    if (error_.empty()) {
      error_ = fmt::format("memory-access instrumentation stopped: {}", why);
      pasta::detail::log(error_);
    }
    mode_ = Mode::none;
  }
  NameId kernel_name(const char* name) {
    if (!name) return intern("(unknown kernel)");
    std::lock_guard lock(names_mutex_);
    auto [it, fresh] = names_.try_emplace(name);
    if (fresh) it->second = intern(name);
    return it->second;
  }

  Config cfg_;
  KernelSelector selector_;
  int page_shift_;
  Mode mode_ = Mode::none;
  bool active_ = false;
  Sanitizer_SubscriberHandle subscriber_ = nullptr;
  void* sink_ = nullptr;
  Stats stats_;
  std::string error_;
  std::atomic<std::uint64_t> next_correlation_{1};

  std::mutex names_mutex_;
  std::unordered_map<std::string, NameId> names_;
  std::mutex select_mutex_;  // guards selector_
  // Patching must be serialised, and sanitizerPatchModule calls back on the
  // same thread: a recursive mutex.
  std::recursive_mutex patch_mutex_;
  std::unordered_set<CUmodule> patched_;
  // Held from an instrumented launch's BEGIN to its END: one instrumented
  // kernel at a time owns the counters.
  std::mutex launch_mutex_;
  std::mutex table_mutex_;                       // guards live_, table_version_
  std::map<std::uint64_t, std::uint64_t> live_;  // base -> bytes of each live allocation
  std::uint64_t table_version_ = 0;
  // The map is guarded by contexts_mutex_; a ContextState's buffers by
  // launch_mutex_, its patches by patch_mutex_.
  std::mutex contexts_mutex_;
  std::unordered_map<CUcontext, std::unique_ptr<detail::ContextState>> contexts_;
  std::vector<device::TraceRecord> host_records_;
};

template <class Sink>
void Sanitizer::start(Sink& sink) {
  constexpr bool raw = Sink::template wants<MemAccess>();
  constexpr bool histograms = Sink::template wants<AccessHistogram>();
  constexpr bool launches =
      Sink::template wants<KernelLaunch>() || Sink::template wants<KernelComplete>();
  constexpr bool memory = Sink::template wants<MemAlloc>() || Sink::template wants<MemFree>();
  mode_ = raw ? Mode::trace : histograms ? Mode::histogram : Mode::none;
  if (mode_ == Mode::trace && (cfg_.access_patch == AccessPatch::atomic ||
                               cfg_.access_patch == AccessPatch::object_atomic)) {
    pasta::detail::log(
        "PASTA_ACCESS_PATCH: the atomic patches count into device histograms, but this pipeline "
        "reduces raw access records on the host (proc::Cpu); using the trace patch");
    cfg_.access_patch = AccessPatch::automatic;
  }
  sink_ = &sink;
  if (!api().loaded()) {
    error_ = api().error;
    pasta::detail::log(error_);
    return;
  }
  if (!api().warning.empty()) pasta::detail::log(api().warning);
  if (cfg_.verbose)
    pasta::detail::log(
        fmt::format("sanitizer handler: the Compute Sanitizer API from {}", api().library));
  const SanitizerResult r = api().sanitizerSubscribe(
      &subscriber_, reinterpret_cast<Sanitizer_CallbackFunc>(&on_callback<Sink>), this);
  if (r != SANITIZER_SUCCESS) {
    error_ = fmt::format(
        "the Compute Sanitizer API refused a subscriber ({}); pasta records "
        "nothing (is compute-sanitizer or another tool attached?)",
        detail::sanitizer_error(r));
    pasta::detail::log(error_);
    return;
  }
  auto enable = [&](Sanitizer_CallbackDomain d, std::string_view what) {
    if (const auto e = api().sanitizerEnableDomain(1, subscriber_, d); e != SANITIZER_SUCCESS)
      pasta::detail::log(fmt::format("sanitizer: enabling {} callbacks failed: {}", what,
                                     detail::sanitizer_error(e)));
  };
  if (mode_ != Mode::none || memory || Sink::template wants<ModuleLoad>() ||
      Sink::template wants<ModuleImage>())
    enable(SANITIZER_CB_DOMAIN_RESOURCE, "resource");
  if (mode_ != Mode::none || launches) enable(SANITIZER_CB_DOMAIN_LAUNCH, "launch");
  if (mode_ != Mode::none) enable(SANITIZER_CB_DOMAIN_GRAPHS, "graph");
  if constexpr (Sink::template wants<Memcpy>()) enable(SANITIZER_CB_DOMAIN_MEMCPY, "memcpy");
  if constexpr (Sink::template wants<Memset>()) enable(SANITIZER_CB_DOMAIN_MEMSET, "memset");
  if constexpr (Sink::template wants<Synchronize>())
    enable(SANITIZER_CB_DOMAIN_SYNCHRONIZE, "synchronize");
  active_ = true;
  if (cfg_.verbose)
    pasta::detail::log(fmt::format("sanitizer handler: patch {}, spaces {:#x}, page {} bytes",
                                   patch_name(), cfg_.access_spaces, 1ull << page_shift_));
}

inline void Sanitizer::stop() {
  if (!active_) return;
  active_ = false;
  api().sanitizerUnsubscribe(subscriber_);
  subscriber_ = nullptr;
  if (cfg_.verbose)
    pasta::detail::log(fmt::format(
        "sanitizer handler: {} launches, {} instrumented, {} modules patched in {:.1f} ms, "
        "post-pass {:.1f} ms, {} records ({} lost), {} bins",
        stats_.launches.load(), stats_.instrumented.load(), stats_.modules_patched.load(),
        stats_.patch_ns.load() / 1e6, stats_.post_ns.load() / 1e6, stats_.records.load(),
        stats_.records_lost.load(), stats_.bins.load()));
  if (stats_.records_lost.load())  // the reports say so too; this line reaches the terminal
    pasta::detail::log(partial_reason() + " (the reports are marked partial)");
  // Device buffers go with their contexts; CUDA may already be torn down at
  // exit, so they are not freed here.
  for (auto& [ctx, c] : contexts_) c.release();
}

template <class Sink>
void SANITIZERAPI Sanitizer::on_callback(void* user, Sanitizer_CallbackDomain domain,
                                         Sanitizer_CallbackId cbid, const void* data) {
  auto* self = static_cast<Sanitizer*>(user);
  if (own_work() > 0 || pasta::detail::inside_dispatch() || !self->active_) return;
  Sink& sink = *static_cast<Sink*>(self->sink_);
  try {
    switch (domain) {
      case SANITIZER_CB_DOMAIN_RESOURCE:
        self->on_resource(sink, cbid, data);
        break;
      case SANITIZER_CB_DOMAIN_LAUNCH: {
        const auto& d = *static_cast<const Sanitizer_LaunchData*>(data);
        if (cbid == SANITIZER_CBID_LAUNCH_BEGIN)
          self->launch_begin(sink, d);
        else if (cbid == SANITIZER_CBID_LAUNCH_END)
          self->launch_end(sink, d);
        break;
      }
      case SANITIZER_CB_DOMAIN_GRAPHS:
        // A kernel node of a graph runs its module's patches with whatever
        // callback data the node carries, and no launch-end callback lets
        // pasta collect after it: it runs with the patches switched off.
        if (cbid == SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN) {
          const auto& g = *static_cast<const Sanitizer_GraphNodeLaunchData*>(data);
          if (g.nodeType == CU_GRAPH_NODE_TYPE_KERNEL) {
            api().sanitizerSetLaunchCallbackData(g.launchData.hLaunch, g.launchData.function,
                                                 g.launchData.hStream, nullptr);
            if (!g.isGraphUpload)
              self->stats_.graph_kernels.fetch_add(1, std::memory_order_relaxed);
          }
        }
        break;
      case SANITIZER_CB_DOMAIN_MEMCPY:
        if constexpr (Sink::template wants<Memcpy>()) {
          const auto& m = *static_cast<const Sanitizer_MemcpyData*>(data);
          CopyKind kind = CopyKind::unknown;
          switch (m.direction) {
            case SANITIZER_MEMCPY_DIRECTION_HOST_TO_DEVICE:
              kind = CopyKind::h2d;
              break;
            case SANITIZER_MEMCPY_DIRECTION_DEVICE_TO_HOST:
              kind = CopyKind::d2h;
              break;
            case SANITIZER_MEMCPY_DIRECTION_DEVICE_TO_DEVICE:
              kind = m.srcContext != m.dstContext ? CopyKind::peer : CopyKind::d2d;
              break;
            case SANITIZER_MEMCPY_DIRECTION_HOST_TO_HOST:
              kind = CopyKind::h2h;
              break;
            default:
              break;
          }
          const std::uint64_t bytes = m.width ? m.width * std::max<std::uint64_t>(m.height, 1) *
                                                    std::max<std::uint64_t>(m.depth, 1)
                                              : m.size;
          sink.emit(Memcpy{.context = reinterpret_cast<std::uint64_t>(m.apiContext),
                           .stream = reinterpret_cast<std::uint64_t>(m.apiStream),
                           .copy_kind = kind,
                           .bytes = bytes ? bytes : m.size,
                           .start_ns = pasta::detail::now_ns()});
        }
        break;
      case SANITIZER_CB_DOMAIN_MEMSET:
        if constexpr (Sink::template wants<Memset>()) {
          const auto& m = *static_cast<const Sanitizer_MemsetData*>(data);
          sink.emit(Memset{.context = reinterpret_cast<std::uint64_t>(m.context),
                           .stream = reinterpret_cast<std::uint64_t>(m.stream),
                           .value = m.value,
                           .address = m.address,
                           .bytes = m.width * std::max<std::uint64_t>(m.height, 1) *
                                    std::max<std::uint32_t>(m.elementSize, 1),
                           .start_ns = pasta::detail::now_ns()});
        }
        break;
      case SANITIZER_CB_DOMAIN_SYNCHRONIZE:
        if constexpr (Sink::template wants<Synchronize>()) {
          const auto& s = *static_cast<const Sanitizer_SynchronizeData*>(data);
          const auto t = pasta::detail::now_ns();
          sink.emit(Synchronize{.sync_kind = cbid == SANITIZER_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED
                                                 ? SyncKind::stream
                                                 : SyncKind::context,
                                .context = reinterpret_cast<std::uint64_t>(s.context),
                                .stream = reinterpret_cast<std::uint64_t>(s.stream),
                                .thread = pasta::detail::thread_id(),
                                .start_ns = t,
                                .end_ns = t});
        }
        break;
      default:
        break;
    }
  } catch (const detail::DeviceError& e) {
    self->fail(e.what);
  } catch (const std::exception& e) {
    self->fail(e.what());
  }
}

template <class Sink>
void Sanitizer::on_resource(Sink& sink, Sanitizer_CallbackId cbid, const void* data) {
  switch (cbid) {
    case SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC:
    case SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC:
    case SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC: {
      const auto& m = *static_cast<const Sanitizer_ResourceMemoryData*>(data);
      MemKind kind = MemKind::device;
      if (m.flags & SANITIZER_MEMORY_FLAG_MANAGED)
        kind = MemKind::managed;
      else if (cbid == SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC ||
               (m.flags & (SANITIZER_MEMORY_FLAG_HOST_PINNED | SANITIZER_MEMORY_FLAG_HOST_MAPPED)))
        kind = MemKind::pinned_host;
      else if (cbid == SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC)
        kind = MemKind::pool;
      const auto device = static_cast<std::uint32_t>(m.device);
      if (mode_ != Mode::none) {
        std::lock_guard lock(table_mutex_);
        live_[m.address] = m.size;
        ++table_version_;
      }
      if constexpr (Sink::template wants<MemAlloc>())
        sink.emit(MemAlloc{.address = m.address,
                           .bytes = m.size,
                           .device = device,
                           .mem_kind = kind,
                           .stream = reinterpret_cast<std::uint64_t>(m.stream),
                           .time_ns = pasta::detail::now_ns()});
      break;
    }
    case SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_FREE:
    case SANITIZER_CBID_RESOURCE_HOST_MEMORY_FREE:
    case SANITIZER_CBID_RESOURCE_MEMORY_FREE_ASYNC: {
      const auto& m = *static_cast<const Sanitizer_ResourceMemoryData*>(data);
      if (mode_ != Mode::none) {
        std::lock_guard lock(table_mutex_);
        live_.erase(m.address);
        ++table_version_;
      }
      if constexpr (Sink::template wants<MemFree>())
        sink.emit(MemFree{.address = m.address,
                          .bytes = m.size,
                          .device = static_cast<std::uint32_t>(m.device),
                          .stream = reinterpret_cast<std::uint64_t>(m.stream),
                          .time_ns = pasta::detail::now_ns()});
      break;
    }
    case SANITIZER_CBID_RESOURCE_MODULE_LOADED: {
      const auto& m = *static_cast<const Sanitizer_ResourceModuleData*>(data);
      // Patched as it loads. Patching at a kernel's first launch instead
      // waited forever on a driver lock for cuDNN's lazily loaded modules
      // (H100, cuDNN 9.14): the launch holds it.
      if (mode_ != Mode::none && wanted(m)) patch_module(context(m.context), m.module);
      if constexpr (Sink::template wants<ModuleLoad>())
        sink.emit(ModuleLoad{.context = reinterpret_cast<std::uint64_t>(m.context),
                             .module = reinterpret_cast<std::uint64_t>(m.module),
                             .image_bytes = m.cubinSize,
                             .time_ns = pasta::detail::now_ns()});
      if constexpr (Sink::template wants<ModuleImage>())
        if (m.pCubin && m.cubinSize)
          sink.emit(ModuleImage{.module = reinterpret_cast<std::uint64_t>(m.module),
                                .image = reinterpret_cast<const std::byte*>(m.pCubin),
                                .image_bytes = m.cubinSize});
      break;
    }
    case SANITIZER_CBID_RESOURCE_MODULE_UNLOAD_STARTING: {
      const auto& m = *static_cast<const Sanitizer_ResourceModuleData*>(data);
      std::lock_guard lock(patch_mutex_);
      patched_.erase(m.module);
      break;
    }
    case SANITIZER_CBID_RESOURCE_CONTEXT_CREATION_FINISHED: {
      // The post-pass module is loaded here, while no launch is under way:
      // cuModuleLoadData inside the launch-end callback of a kernel on a
      // non-blocking stream waited forever on a driver lock (H100, driver
      // 580; the default stream did not), in-binary and injected alike.
      if (mode_ == Mode::histogram) {
        const auto& c = *static_cast<const Sanitizer_ResourceContextData*>(data);
        prepare_post_pass(context(c.context));
      }
      break;
    }
    case SANITIZER_CBID_RESOURCE_CONTEXT_DESTROY_STARTING: {
      const auto& c = *static_cast<const Sanitizer_ResourceContextData*>(data);
      std::scoped_lock lock(launch_mutex_, contexts_mutex_);
      contexts_.erase(c.context);
      break;
    }
    default:
      break;
  }
}

// Adds the patch image to the context (once) and patches the module's
// memory instructions (once per module).
inline void Sanitizer::patch_module(detail::ContextState& c, CUmodule module) {
  std::lock_guard lock(patch_mutex_);
  if (patched_.count(module)) return;
  const auto t0 = pasta::detail::steady_ns();
  if (!c.patches_added) {
    detail::check(api().sanitizerAddPatches(generated::access_patches, c.ctx),
                  "adding pasta's device patches");
    c.patches_added = true;
  }
  // A context created before pasta subscribed: its post-pass comes with its
  // first patched module, still outside any launch.
  if (mode_ == Mode::histogram) prepare_post_pass(c);
  const std::string family(patch_family());
  struct Space {
    unsigned bit;
    Sanitizer_InstructionId id;
    const char* suffix;
  };
  for (const Space s : {Space{space::global, SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, "global"},
                        Space{space::shared, SANITIZER_INSTRUCTION_SHARED_MEMORY_ACCESS, "shared"},
                        Space{space::local, SANITIZER_INSTRUCTION_LOCAL_MEMORY_ACCESS, "local"}}) {
    if (!(cfg_.access_spaces & s.bit)) continue;
    const std::string patch = fmt::format("pasta_{}_{}", family, s.suffix);
    detail::check(api().sanitizerPatchInstructions(s.id, module, patch.c_str()),
                  fmt::format("patching {} memory accesses with {}", s.suffix, patch));
  }
  detail::check(api().sanitizerPatchModule(module), "patching a module");
  patched_.insert(module);
  stats_.modules_patched.fetch_add(1, std::memory_order_relaxed);
  stats_.patch_ns.fetch_add(pasta::detail::steady_ns() - t0, std::memory_order_relaxed);
}

// Brings the context's table, counters and parameters up to date for one
// launch and points the launch's callback data at them. launch_mutex_ held.
inline void Sanitizer::prepare_launch(detail::ContextState& c, const Sanitizer_LaunchData& d) {
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
        detail::check(api().sanitizerMemcpyHostToDeviceAsync(
                          c.ranges.get(), c.host_ranges.data(),
                          c.host_ranges.size() * sizeof(AllocRange), d.hStream),
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
  if (mode_ == Mode::histogram) {
    const std::size_t bytes = c.slot_count * sizeof(device::Slot);
    if (c.slots.reserve(ctx, bytes, "page counters"))
      detail::check(api().sanitizerMemset(c.slots.get(), 0, c.slots.bytes(), d.hStream),
                    "clearing page counters");
    c.bins.reserve(ctx, c.slot_count * sizeof(device::Bin), "compacted counters");
    p.slots = c.slots.get<device::Slot>();
    p.slot_count = c.slot_count;
  }
  if (c.counters.reserve(ctx, 2 * sizeof(unsigned long long), "counters"))
    detail::check(api().sanitizerMemset(c.counters.get(), 0, c.counters.bytes(), d.hStream),
                  "clearing counters");
  if (mode_ == Mode::trace) {
    c.records.reserve(ctx, cfg_.trace_buffer_bytes, "the access trace buffer");
    p.records = c.records.get<device::TraceRecord>();
    p.capacity = c.records.bytes() / sizeof(device::TraceRecord);
    p.record_count = c.counters.get<unsigned long long>();
  }
  std::uint64_t pc = 0, size = 0;
  if (d.functionName && api().sanitizerGetFunctionPcAndSize(d.module, d.functionName, &pc, &size) ==
                            SANITIZER_SUCCESS)
    p.function_pc = pc;
  c.params.reserve(ctx, sizeof(device::Params), "launch parameters");
  detail::check(api().sanitizerMemcpyHostToDeviceAsync(c.params.get(), &p, sizeof(p), d.hStream),
                "copying launch parameters");
  detail::check(
      api().sanitizerSetLaunchCallbackData(d.hLaunch, d.function, d.hStream, c.params.get()),
      "setting the launch's callback data");
}

template <class Sink>
void Sanitizer::launch_begin(Sink& sink, const Sanitizer_LaunchData& d) {
  stats_.launches.fetch_add(1, std::memory_order_relaxed);
  Launch& l = this_launch();
  l = Launch{.correlation = next_correlation_.fetch_add(1, std::memory_order_relaxed),
             .name = kernel_name(d.functionName),
             .device = static_cast<std::uint32_t>(d.device),
             .grid = {d.gridDim_x, d.gridDim_y, d.gridDim_z},
             .block = {d.blockDim_x, d.blockDim_y, d.blockDim_z}};
  if constexpr (Sink::template wants<KernelLaunch>())
    sink.emit(KernelLaunch{.correlation = l.correlation,
                           .context = reinterpret_cast<std::uint64_t>(d.context),
                           .stream = reinterpret_cast<std::uint64_t>(d.stream),
                           .device = l.device,
                           .name = l.name,
                           .grid = l.grid,
                           .block = l.block,
                           .thread = pasta::detail::thread_id(),
                           .time_ns = pasta::detail::now_ns()});
  if (mode_ == Mode::none) return;
  bool selected;
  {
    std::lock_guard lock(select_mutex_);
    selected = selector_.select(l.name);
  }
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (selected && d.stream &&
      detail::loaded_driver().stream_is_capturing(d.stream, &capture) == CUDA_SUCCESS &&
      capture != CU_STREAM_CAPTURE_STATUS_NONE)
    selected = false;  // captured into a graph, not run: nothing to count now
  bool patched;
  {
    std::lock_guard lock(patch_mutex_);
    patched = patched_.count(d.module) != 0;
  }
  if (!selected) {
    // A patched module runs its patches on every launch: tell them to do nothing.
    if (patched) api().sanitizerSetLaunchCallbackData(d.hLaunch, d.function, d.hStream, nullptr);
    return;
  }
  launch_mutex_.lock();  // released in launch_end
  try {
    detail::ContextState& c = context(d.context);
    if (!patched) patch_module(c, d.module);
    prepare_launch(c, d);
    l.ctx = &c;
    stats_.instrumented.fetch_add(1, std::memory_order_relaxed);
  } catch (...) {
    api().sanitizerSetLaunchCallbackData(d.hLaunch, d.function, d.hStream, nullptr);
    launch_mutex_.unlock();
    throw;
  }
}

template <class Sink>
void Sanitizer::launch_end(Sink& sink, const Sanitizer_LaunchData& d) {
  Launch l = this_launch();
  this_launch() = Launch{};
  if (l.ctx) {
    std::unique_lock lock(launch_mutex_, std::adopt_lock);
    const auto t0 = pasta::detail::steady_ns();
    try {
      if (mode_ == Mode::histogram && cfg_.access_patch != AccessPatch::noop)
        collect_histogram(sink, d, l);
      else if (mode_ == Mode::trace && cfg_.access_patch != AccessPatch::noop)
        collect_trace(sink, d, l);
      else
        detail::check(api().sanitizerStreamSynchronize(d.hStream), "waiting for the kernel");
    } catch (...) {
      stats_.post_ns.fetch_add(pasta::detail::steady_ns() - t0, std::memory_order_relaxed);
      throw;
    }
    stats_.post_ns.fetch_add(pasta::detail::steady_ns() - t0, std::memory_order_relaxed);
  }
  if constexpr (Sink::template wants<KernelComplete>())
    sink.emit(KernelComplete{.correlation = l.correlation,
                             .context = reinterpret_cast<std::uint64_t>(d.context),
                             .stream = reinterpret_cast<std::uint64_t>(d.stream),
                             .device = l.device,
                             .name = l.name,
                             .grid = l.grid,
                             .block = l.block});
}

// After the kernel: the post-pass compacts the non-empty counters on the
// device (and clears them), then only those travel to the host.
template <class Sink>
void Sanitizer::collect_histogram(Sink& sink, const Sanitizer_LaunchData& d, const Launch& l) {
  detail::ContextState& c = *l.ctx;
  unsigned long long* out_count = c.counters.get<unsigned long long>() + 1;
  {
    OwnWork own;
    const detail::Driver& driver = detail::loaded_driver();
    CUcontext previous = nullptr;
    detail::check(driver.push(c.ctx), "entering the launch's context");
    try {
      // Loaded at context creation or with the first patched module: here,
      // inside the launch, loading it can wait forever (see above).
      if (!c.compact) throw detail::DeviceError{"pasta's post-pass kernel is not loaded"};
      c.host_count.reserve(c.ctx, sizeof(unsigned long long), "the count of non-empty pages");
      void* slots = c.slots.get();
      void* bins = c.bins.get();
      void* host_count = c.host_count.get();
      std::uint64_t n = c.slot_count;
      void* args[] = {&slots, &n, &bins, &out_count};
      const std::uint64_t tiles = (n + device::compact_block - 1) / device::compact_block;
      const unsigned grid = static_cast<unsigned>(std::min<std::uint64_t>(tiles, 1024));
      detail::check(driver.launch(c.compact, grid, 1, 1, device::compact_block, 1, 1, 0, d.stream,
                                  args, nullptr),
                    "launching the post-pass");
      void* publish_args[] = {&out_count, &host_count};
      detail::check(driver.launch(c.publish, 1, 1, 1, 1, 1, 1, 0, d.stream, publish_args, nullptr),
                    "launching the post-pass's count copy");
      detail::check(api().sanitizerStreamSynchronize(d.hStream), "waiting for the post-pass");
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
  if (count > c.slot_count) throw detail::DeviceError{"the post-pass returned a corrupt count"};
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
void Sanitizer::collect_trace(Sink& sink, const Sanitizer_LaunchData& d, const Launch& l) {
  detail::ContextState& c = *l.ctx;
  auto* counter = c.counters.get<unsigned long long>();
  unsigned long long written = 0;
  detail::check(api().sanitizerStreamSynchronize(d.hStream), "waiting for the kernel");
  detail::check(api().sanitizerMemcpyDeviceToHost(&written, counter, sizeof(written), d.hStream),
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
    detail::check(api().sanitizerMemcpyDeviceToHost(host_records_.data(),
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
  detail::check(api().sanitizerMemset(counter, 0, sizeof(written), d.hStream),
                "clearing the record count");
}

}  // namespace pasta::nv
