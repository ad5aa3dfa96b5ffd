// pasta::nv::Sanitizer: the Compute Sanitizer API handler. Launches,
// allocations (device, managed, pinned host, pool), copies, memsets,
// synchronisations and module loads come from its callbacks; memory accesses
// of the kernels the user selected come from device patches (kernels/):
//   * a pipeline whose processor wants AccessHistogram (proc::GpuBucketing)
//     gets per-page counters reduced on the device, compacted by a CUB
//     post-pass, and only the non-empty pages copied back;
//   * one whose tools count per instruction (PcAccessCount) under
//     proc::GpuBucketing gets counts per (pc, region) reduced on the device,
//     for the regions the tools give at each launch (AccessRegions);
//   * one whose processor wants MemAccess (proc::Cpu) gets every access as
//     a 16-byte record through a device buffer, reduced on the host.
// Modules are patched at the first selected launch of one of their kernels,
// and never when no tool consumes memory accesses.
//
// CUPTI and the Sanitizer API cannot share a process (docs/user-guide.md):
// a pipeline naming both does not compile, and a CUPTI client attached first
// (Nsight, torch.profiler) silences the Sanitizer API, which pasta reports.
//
// The class: it subscribes and decodes callbacks. What it does at each
// launch, from selection to read-back, is defined in launches.hpp; include
// pasta/nv/sanitizer.hpp for both. The parts are under detail/:
// patcher.hpp (device patches), buffers.hpp (what a launch's patches write,
// and reading it back), events.hpp, report.hpp.
#pragma once

#include <cuda.h>
#include <sanitizer.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/capture_window.hpp>
#include <pasta/core/detail/thread.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/kernel_selector.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/pipeline.hpp>
#include <pasta/core/report.hpp>
#include <pasta/nv/detail/cubin.hpp>
#include <pasta/nv/sanitizer/settings.hpp>
#include <pasta/nv/sanitizer/detail/buffers.hpp>
#include <pasta/nv/sanitizer/detail/device.hpp>
#include <pasta/nv/sanitizer/detail/events.hpp>
#include <pasta/nv/sanitizer/detail/patcher.hpp>
#include <pasta/nv/sanitizer/detail/report.hpp>

namespace pasta::nv {

class Sanitizer {
 public:
  static constexpr std::string_view name = "sanitizer";
  // CUDA allows one tools subscriber per process; core/handlers.hpp checks it.
  static constexpr std::string_view cuda_tools_subscriber = "Compute Sanitizer API";
  // cudaProfilerStart/Stop bound a capture window (core/capture.hpp).
  static constexpr unsigned capture_sources = capture_sources::profiler_api;

  using Mode = detail::AccessMode;
  using Stats = detail::SanitizerStats;

  using settings = SanitizerSettings;

  explicit Sanitizer(const Config& cfg, const SanitizerSettings& own = {})
      : cfg_(cfg, own),
        selector_(cfg),
        buffers_(stats_,
                 std::countr_zero(std::bit_floor(std::max<std::uint64_t>(cfg.page_bytes, 1)))) {}
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
    return detail::sanitizer_partial_reason(stats_, error_, cfg_.trace_buffer_bytes);
  }
  void report(Report& out) const {
    out.page(130);  // after the tools
    detail::sanitizer_report(out, stats_, mode_, patch_name(), cfg_.trace_buffer_bytes, error_);
  }

 private:
  using Launch = detail::LaunchState;
  // The Sanitizer API's functions, loaded at the first start(), from
  // SanitizerSettings::library first when set (detail/api.hpp).
  static const detail::SanitizerApi& api() { return detail::sanitizer_api(); }
  static Launch& this_launch() {
    thread_local Launch l;
    return l;
  }

  template <class Sink>
  static void SANITIZERAPI on_callback(void* user, Sanitizer_CallbackDomain domain,
                                       Sanitizer_CallbackId cbid, const void* data);
  template <class Sink>
  void on_resource(Sink& sink, Sanitizer_CallbackId cbid, const void* data);
  template <class Sink>
  void launch_begin(Sink& sink, const Sanitizer_LaunchData& d);
  template <class Sink>
  void launch_end(Sink& sink, const Sanitizer_LaunchData& d);

  void patch_module(detail::ContextState& c, CUmodule module) {
    patcher_.patch_module(c, module, patch_family(), cfg_.access_spaces,
                          mode_ == Mode::histogram || mode_ == Mode::pcs);
  }
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
    return mode_ == Mode::trace ? "trace" : mode_ == Mode::pcs ? "pc" : "bucket";
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

  ConfigWith<SanitizerSettings> cfg_;
  KernelSelector selector_;
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
  detail::AccessPatcher patcher_{stats_};
  detail::AccessBuffers buffers_;
  // Held from an instrumented launch's BEGIN to its END: one instrumented
  // kernel at a time owns the counters.
  std::mutex launch_mutex_;
  // The map is guarded by contexts_mutex_; a ContextState's buffers by
  // launch_mutex_, its patches by the patcher's mutex.
  std::mutex contexts_mutex_;
  std::unordered_map<CUcontext, std::unique_ptr<detail::ContextState>> contexts_;
};

template <class Sink>
void Sanitizer::start(Sink& sink) {
  constexpr bool raw = Sink::template wants<MemAccess>();
  constexpr bool histograms = Sink::template wants<AccessHistogram>();
  constexpr bool pcs = Sink::template wants<PcAccessCount>();
  constexpr bool launches =
      Sink::template wants<KernelLaunch>() || Sink::template wants<KernelComplete>();
  constexpr bool memory = Sink::template wants<MemAlloc>() || Sink::template wants<MemFree>();
  mode_ = raw ? Mode::trace : pcs ? Mode::pcs : histograms ? Mode::histogram : Mode::none;
  if (!raw && pcs && histograms)
    pasta::detail::log(
        "sanitizer handler: one run counts either per instruction or per page; this pipeline's "
        "tools want both, and get the per-instruction counts only (page histograms need a run "
        "of their own)");
  if ((mode_ == Mode::trace || mode_ == Mode::pcs) &&
      (cfg_.access_patch == AccessPatch::atomic ||
       cfg_.access_patch == AccessPatch::object_atomic)) {
    pasta::detail::log(fmt::format(
        "PASTA_ACCESS_PATCH: the atomic patches count into device histograms, but this pipeline "
        "{}; using the {} patch",
        mode_ == Mode::trace ? "reduces raw access records on the host (proc::Cpu)"
                             : "counts per instruction",
        mode_ == Mode::trace ? "trace" : "pc"));
    cfg_.access_patch = AccessPatch::automatic;
  }
  sink_ = &sink;
  if (!detail::sanitizer_api(cfg_.library).loaded()) {
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
  if (pasta::detail::capture_window().kind() == CaptureRange::Kind::profiler_api)
    for (Sanitizer_CallbackId id :
         {SANITIZER_CBID_DRIVER_API_cuProfilerStart, SANITIZER_CBID_DRIVER_API_cuProfilerStop})
      if (const auto e =
              api().sanitizerEnableCallback(1, subscriber_, SANITIZER_CB_DOMAIN_DRIVER_API, id);
          e != SANITIZER_SUCCESS)
        pasta::detail::log(
            fmt::format("sanitizer: enabling the cuProfilerStart/Stop callbacks "
                        "failed: {}",
                        detail::sanitizer_error(e)));
  active_ = true;
  if (cfg_.verbose)
    pasta::detail::log(fmt::format("sanitizer handler: patch {}, spaces {:#x}, page {} bytes",
                                   patch_name(), cfg_.access_spaces,
                                   1ull << buffers_.page_shift()));
}

inline void Sanitizer::stop() {
  if (!active_) return;
  active_ = false;
  api().sanitizerUnsubscribe(subscriber_);
  subscriber_ = nullptr;
  if (cfg_.verbose) pasta::detail::log(detail::sanitizer_stop_line(stats_));
  // The reports say so too; this line reaches the terminal.
  if (stats_.records_lost.load() || stats_.pc_lost.load())
    pasta::detail::log(partial_reason() + " (the reports are marked partial)");
  // Device buffers go with their contexts; CUDA may already be torn down at
  // exit, so they are not freed here.
  for (auto& [ctx, c] : contexts_) c.release();
}

template <class Sink>
void SANITIZERAPI Sanitizer::on_callback(void* user, Sanitizer_CallbackDomain domain,
                                         Sanitizer_CallbackId cbid, const void* data) {
  auto* self = static_cast<Sanitizer*>(user);
  if (detail::own_work() > 0 || pasta::detail::inside_dispatch() || !self->active_) return;
  Sink& sink = *static_cast<Sink*>(self->sink_);
  // Copies, memsets and synchronisations inside the capture window only.
  const bool in_window = pasta::detail::capture_window().open();
  try {
    switch (domain) {
      case SANITIZER_CB_DOMAIN_DRIVER_API:  // cuProfilerStart/Stop, the only ones enabled
        pasta::detail::capture_window().profiler_api_callback(
            cbid == SANITIZER_CBID_DRIVER_API_cuProfilerStart,
            static_cast<const Sanitizer_CallbackData*>(data)->callbackSite == SANITIZER_API_EXIT);
        break;
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
        if constexpr (Sink::template wants<Memcpy>())
          if (in_window)
            sink.emit(detail::memcpy_event(*static_cast<const Sanitizer_MemcpyData*>(data)));
        break;
      case SANITIZER_CB_DOMAIN_MEMSET:
        if constexpr (Sink::template wants<Memset>())
          if (in_window)
            sink.emit(detail::memset_event(*static_cast<const Sanitizer_MemsetData*>(data)));
        break;
      case SANITIZER_CB_DOMAIN_SYNCHRONIZE:
        if constexpr (Sink::template wants<Synchronize>())
          if (in_window)
            sink.emit(detail::synchronize_event(
                cbid, *static_cast<const Sanitizer_SynchronizeData*>(data)));
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
      const MemKind kind = detail::alloc_kind(cbid, m);
      const auto device = static_cast<std::uint32_t>(m.device);
      if (mode_ != Mode::none) buffers_.allocated(m.address, m.size);
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
      if (mode_ != Mode::none) buffers_.freed(m.address);
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
      patcher_.unloading(static_cast<const Sanitizer_ResourceModuleData*>(data)->module);
      break;
    }
    case SANITIZER_CBID_RESOURCE_CONTEXT_CREATION_FINISHED: {
      // The post-pass module is loaded here, while no launch is under way:
      // cuModuleLoadData inside the launch-end callback of a kernel on a
      // non-blocking stream waited forever on a driver lock (H100, driver
      // 580; the default stream did not), in-binary and injected alike.
      if (mode_ == Mode::histogram || mode_ == Mode::pcs) {
        const auto& c = *static_cast<const Sanitizer_ResourceContextData*>(data);
        patcher_.prepare_post_pass(context(c.context));
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

}  // namespace pasta::nv
