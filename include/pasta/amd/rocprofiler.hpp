// pasta::amd::Rocprofiler: the AMD handler, on rocprofiler-sdk (ROCm 6.2+).
// Kernel dispatches with device timestamps and memory copies come from
// buffer tracing; launches (on the launching thread), allocations, frees,
// memsets and synchronisations from HIP runtime and dispatch callbacks;
// kernel names from code-object callbacks; ROCTx ranges become scopes. It
// emits the events nv::Cupti emits, so every tool works unchanged, and it
// enables only what some tool consumes. The record translation is in
// detail/records.hpp.
//
// In a binary: construct the profiler before the first HIP call (the handler
// registers with rocprofiler_force_configure, which is refused once the HIP
// runtime is up) and link rocprofiler-sdk::rocprofiler-sdk. For unmodified
// programs: PASTA_ROCPROFILER_TOOL (amd/inject.hpp) and ROCP_TOOL_LIBRARIES.
#pragma once

#include <rocprofiler-sdk/registration.h>
#include <rocprofiler-sdk/rocprofiler.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/amd/detail/records.hpp>
#include <pasta/core/config.hpp>
#include <pasta/core/detail/op_correlation.hpp>
#include <pasta/core/detail/thread.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/detail/scope_registry.hpp>

namespace pasta::amd {

namespace detail {

static_assert(copy_op::host_to_host == ROCPROFILER_MEMORY_COPY_HOST_TO_HOST &&
                  copy_op::host_to_device == ROCPROFILER_MEMORY_COPY_HOST_TO_DEVICE &&
                  copy_op::device_to_host == ROCPROFILER_MEMORY_COPY_DEVICE_TO_HOST &&
                  copy_op::device_to_device == ROCPROFILER_MEMORY_COPY_DEVICE_TO_DEVICE,
              "rocprofiler-sdk renumbered its memory copy operations: update records.hpp");

inline HipCall hip_call_of(rocprofiler_tracing_operation_t op) {
  switch (op) {
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipMalloc:
      return HipCall::malloc;
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipMallocManaged:
      return HipCall::malloc_managed;
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipHostMalloc:
      return HipCall::host_malloc;
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipExtMallocWithFlags:
      return HipCall::ext_malloc;
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipMallocAsync:
      return HipCall::malloc_async;
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipMallocFromPoolAsync:
      return HipCall::malloc_pool;
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipFree:
      return HipCall::free;
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipHostFree:
      return HipCall::host_free;
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipFreeAsync:
      return HipCall::free_async;
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipMemset:
      return HipCall::memset;
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipMemsetAsync:
      return HipCall::memset_async;
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipDeviceSynchronize:
      return HipCall::device_sync;
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipStreamSynchronize:
      return HipCall::stream_sync;
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipEventSynchronize:
      return HipCall::event_sync;
    case ROCPROFILER_HIP_RUNTIME_API_ID_hipSetDevice:
      return HipCall::set_device;
    default:
      return HipCall::other;
  }
}

inline std::string status_string(rocprofiler_status_t s) {
  const char* text = rocprofiler_get_status_string(s);
  return text ? text : fmt::format("status {}", static_cast<int>(s));
}

// rocprofiler-sdk calls a tool's configure function, then its initialize
// callback, where contexts may be created. The handler waiting for it:
struct Registration {
  std::atomic<void*> pending{nullptr};
  void (*initialize)(void* handler) = nullptr;
  std::atomic<bool> inside_initialize{false};  // the tool library's initialize is running
};
inline Registration& registration() {
  static Registration r;
  return r;
}
inline int tool_initialize(rocprofiler_client_finalize_t, void*) {
  Registration& r = registration();
  if (void* h = r.pending.exchange(nullptr)) r.initialize(h);
  return 0;
}
inline void tool_finalize(void*) {}
// What a configure function hands rocprofiler-sdk: the client's name and
// the tool's initialize and finalize callbacks.
template <rocprofiler_tool_initialize_t Initialize, rocprofiler_tool_finalize_t Finalize>
rocprofiler_tool_configure_result_t* tool_result(rocprofiler_client_id_t* client) {
  client->name = "pasta";
  static rocprofiler_tool_configure_result_t result{sizeof(rocprofiler_tool_configure_result_t),
                                                    Initialize, Finalize, nullptr};
  return &result;
}
inline rocprofiler_tool_configure_result_t* configure(std::uint32_t, const char*, std::uint32_t,
                                                      rocprofiler_client_id_t* client) {
  return tool_result<&tool_initialize, &tool_finalize>(client);
}

}  // namespace detail

class Rocprofiler {
 public:
  static constexpr std::string_view name = "rocprofiler";
  static constexpr std::size_t buffer_bytes = 4u << 20;

  explicit Rocprofiler(const Config& cfg) : verbose_(cfg.verbose), op_tags_(cfg.op_tags) {}
  ~Rocprofiler() { stop(); }
  Rocprofiler(const Rocprofiler&) = delete;
  Rocprofiler& operator=(const Rocprofiler&) = delete;

  template <class Sink>
  void start(Sink& sink);
  void stop();
  // Every record rocprofiler holds, delivered before this returns.
  void flush() {
    if (active_ && buffer_.handle) check(rocprofiler_flush_buffer(buffer_), "flushing records");
  }
  bool active() const { return active_; }
  std::string partial_reason() const {
    if (!error_.empty()) return error_;
    if (const auto d = dropped_.load()) return fmt::format("rocprofiler-sdk dropped {} records", d);
    return {};
  }

 private:
  template <class Sink>
  void configure();
  template <class Sink>
  void list_agents();
  template <class Sink>
  void trace_callbacks();
  template <class Sink>
  void trace_records();
  template <class Sink>
  static void on_callback(rocprofiler_callback_tracing_record_t record,
                          rocprofiler_user_data_t* user_data, void* self);
  template <class Sink>
  static void on_buffer(rocprofiler_context_id_t, rocprofiler_buffer_id_t,
                        rocprofiler_record_header_t** headers, std::size_t count, void* self,
                        std::uint64_t dropped);
  template <class Sink>
  void on_hip(const rocprofiler_callback_tracing_record_t& record, rocprofiler_user_data_t* data);

  bool check(rocprofiler_status_t s, std::string_view what) {
    if (s == ROCPROFILER_STATUS_SUCCESS) return true;
    pasta::detail::log_once(
        fmt::format("rocprofiler:{}", what),
        fmt::format("rocprofiler-sdk: {} failed: {}", what, detail::status_string(s)));
    return false;
  }
  static std::uint64_t clock() {
    rocprofiler_timestamp_t t = 0;
    rocprofiler_get_timestamp(&t);
    return t;
  }
  static std::uint32_t& current_device() {  // HIP's per-thread device, from hipSetDevice
    thread_local std::uint32_t device = 0;
    return device;
  }
  static std::atomic<Rocprofiler*>& current() {
    static std::atomic<Rocprofiler*> c{nullptr};
    return c;
  }
  // Operator sources tag the calling thread's device work with the operator
  // through rocprofiler's external correlation ids.
  static void op_enter(std::uint64_t op, NameId) {
    if (Rocprofiler* self = current().load())
      rocprofiler_push_external_correlation_id(self->context_, pasta::detail::thread_id(),
                                               rocprofiler_user_data_t{.value = op});
  }
  static void op_exit() {
    if (Rocprofiler* self = current().load()) {
      rocprofiler_user_data_t last{};
      rocprofiler_pop_external_correlation_id(self->context_, pasta::detail::thread_id(), &last);
    }
  }
  static constexpr pasta::detail::OpCorrelator op_hooks{&op_enter, &op_exit};

  bool verbose_;
  bool op_tags_;
  bool active_ = false;
  void* sink_ = nullptr;
  std::string error_;
  rocprofiler_context_id_t context_{};
  rocprofiler_buffer_id_t buffer_{};
  detail::Agents agents_;
  detail::KernelNames kernel_names_;
  detail::LiveAllocations live_;
  std::atomic<std::uint64_t> dropped_{0};
};

template <class Sink>
void Rocprofiler::start(Sink& sink) {
  Rocprofiler* expected = nullptr;
  if (!current().compare_exchange_strong(expected, this)) {
    error_ = "a rocprofiler handler is already active in this process; this one records nothing";
    pasta::detail::log(error_);
    return;
  }
  sink_ = &sink;
  detail::Registration& reg = detail::registration();
  if (reg.inside_initialize.load()) {  // the tool library's initialize constructs the profiler
    configure<Sink>();
    return;
  }
  reg.initialize = [](void* self) { static_cast<Rocprofiler*>(self)->configure<Sink>(); };
  reg.pending.store(this);
  const rocprofiler_status_t s = rocprofiler_force_configure(&detail::configure);
  if (reg.pending.exchange(nullptr) == this) {  // initialize never ran
    error_ = s == ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED
                 ? "rocprofiler-sdk is already configured (the HIP runtime started before the "
                   "profiler, or a tool from ROCP_TOOL_LIBRARIES took it): construct the profiler "
                   "before the first HIP call; pasta records nothing"
                 : fmt::format(
                       "rocprofiler-sdk refused pasta's registration: {}; pasta records "
                       "nothing",
                       detail::status_string(s));
    pasta::detail::log(error_);
    current() = nullptr;
  }
}

namespace detail {
// What a sink's tools consume, as the rocprofiler-sdk services that deliver it.
template <class Sink>
struct Wanted {
  static constexpr bool completions = Sink::template wants<KernelComplete>();
  static constexpr bool launches = Sink::template wants<KernelLaunch>();
  static constexpr bool copies = Sink::template wants<Memcpy>();
  static constexpr bool sets = Sink::template wants<Memset>();
  static constexpr bool memory =
      Sink::template wants<MemAlloc>() || Sink::template wants<MemFree>();
  static constexpr bool syncs = Sink::template wants<Synchronize>();
  static constexpr bool modules = Sink::template wants<ModuleLoad>();
  static constexpr bool scopes =
      Sink::template wants<ScopeBegin>() || Sink::template wants<ScopeEnd>();
  static constexpr bool ops = (completions || launches || copies) &&
                              (Sink::template wants<OpBegin>() || Sink::template wants<OpEnd>());
  static constexpr bool hip_api = memory || sets || syncs;
};
}  // namespace detail

// Runs inside rocprofiler's tool initialisation, the only place where
// contexts may be created.
template <class Sink>
void Rocprofiler::configure() {
  using W = detail::Wanted<Sink>;
  list_agents<Sink>();  // first: every record names its device by agent
  if (!check(rocprofiler_create_context(&context_), "creating a context")) {
    error_ = "rocprofiler-sdk gave pasta no context; pasta records nothing";
    current() = nullptr;
    return;
  }
  trace_callbacks<Sink>();
  trace_records<Sink>();
  if (!check(rocprofiler_start_context(context_), "starting the context")) {
    error_ = "rocprofiler-sdk did not start pasta's context; pasta records nothing";
    current() = nullptr;
    return;
  }
  if (W::ops && op_tags_) pasta::detail::op_correlator().store(&op_hooks, std::memory_order_release);
  // Host events (scopes) share rocprofiler's clock, so timelines line up.
  pasta::detail::set_clock(&clock);
  active_ = true;
  if (verbose_)
    pasta::detail::log(fmt::format(
        "rocprofiler handler: dispatch records {}, launch callbacks {}, copies {}, HIP API "
        "callbacks {}, ROCTx {}",
        W::completions ? "on" : "off", W::launches ? "on" : "off", W::copies ? "on" : "off",
        W::hip_api ? "on" : "off", W::scopes ? "on" : "off"));
}

// The agents (CPUs and GPUs), and each GPU's DeviceInfo where a tool wants it.
template <class Sink>
void Rocprofiler::list_agents() {
  auto on_agents = [](rocprofiler_agent_version_t, const void** list, std::size_t n,
                      void* self_ptr) {
    auto& self = *static_cast<Rocprofiler*>(self_ptr);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& a = *static_cast<const rocprofiler_agent_v0_t*>(list[i]);
      const bool gpu = a.type == ROCPROFILER_AGENT_TYPE_GPU;
      self.agents_.add(a, gpu);
      if constexpr (Sink::template wants<DeviceInfo>()) {
        if (!gpu) continue;
        std::uint64_t memory_bytes = 0;
        for (std::uint32_t b = 0; b < a.mem_banks_count; ++b)
          if (a.mem_banks[b].heap_type == HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC ||
              a.mem_banks[b].heap_type == HSA_HEAPTYPE_FRAME_BUFFER_PRIVATE)
            memory_bytes += a.mem_banks[b].size_in_bytes;
        static_cast<Sink*>(self.sink_)
            ->emit(detail::device_info(a, intern(a.product_name ? a.product_name : a.name),
                                       memory_bytes));
      }
    }
    return ROCPROFILER_STATUS_SUCCESS;
  };
  check(rocprofiler_query_available_agents(ROCPROFILER_AGENT_INFO_VERSION_0, on_agents,
                                           sizeof(rocprofiler_agent_v0_t), this),
        "listing agents");
}

// The callback services: code objects (kernel names), dispatches, the HIP
// calls the tools want, ROCTx ranges.
template <class Sink>
void Rocprofiler::trace_callbacks() {
  using W = detail::Wanted<Sink>;
  auto trace = [&](rocprofiler_callback_tracing_kind_t kind,
                   std::vector<rocprofiler_tracing_operation_t> ops_list, std::string_view what) {
    check(rocprofiler_configure_callback_tracing_service(
              context_, kind, ops_list.empty() ? nullptr : ops_list.data(), ops_list.size(),
              &on_callback<Sink>, this),
          what);
  };
  if constexpr (W::completions || W::launches || W::modules)  // kernel names, code objects
    trace(ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT, {}, "code-object callbacks");
  if constexpr (W::launches)
    trace(ROCPROFILER_CALLBACK_TRACING_KERNEL_DISPATCH, {ROCPROFILER_KERNEL_DISPATCH_ENQUEUE},
          "dispatch callbacks");
  if constexpr (W::hip_api) {
    std::vector<rocprofiler_tracing_operation_t> hip{ROCPROFILER_HIP_RUNTIME_API_ID_hipSetDevice};
    if (W::memory)
      hip.insert(hip.end(), {ROCPROFILER_HIP_RUNTIME_API_ID_hipMalloc,
                             ROCPROFILER_HIP_RUNTIME_API_ID_hipMallocManaged,
                             ROCPROFILER_HIP_RUNTIME_API_ID_hipHostMalloc,
                             ROCPROFILER_HIP_RUNTIME_API_ID_hipExtMallocWithFlags,
                             ROCPROFILER_HIP_RUNTIME_API_ID_hipMallocAsync,
                             ROCPROFILER_HIP_RUNTIME_API_ID_hipMallocFromPoolAsync,
                             ROCPROFILER_HIP_RUNTIME_API_ID_hipFree,
                             ROCPROFILER_HIP_RUNTIME_API_ID_hipHostFree,
                             ROCPROFILER_HIP_RUNTIME_API_ID_hipFreeAsync});
    if (W::sets)
      hip.insert(hip.end(), {ROCPROFILER_HIP_RUNTIME_API_ID_hipMemset,
                             ROCPROFILER_HIP_RUNTIME_API_ID_hipMemsetAsync});
    if (W::syncs)
      hip.insert(hip.end(), {ROCPROFILER_HIP_RUNTIME_API_ID_hipDeviceSynchronize,
                             ROCPROFILER_HIP_RUNTIME_API_ID_hipStreamSynchronize,
                             ROCPROFILER_HIP_RUNTIME_API_ID_hipEventSynchronize});
    trace(ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API, std::move(hip), "HIP runtime callbacks");
  }
  if constexpr (W::scopes)
    trace(ROCPROFILER_CALLBACK_TRACING_MARKER_CORE_API,
          {ROCPROFILER_MARKER_CORE_API_ID_roctxRangePushA,
           ROCPROFILER_MARKER_CORE_API_ID_roctxRangePop},
          "ROCTx callbacks");
}

// The buffered records: kernel dispatches with device times, memory copies.
template <class Sink>
void Rocprofiler::trace_records() {
  using W = detail::Wanted<Sink>;
  if constexpr (W::completions || W::copies) {
    if (!check(rocprofiler_create_buffer(context_, buffer_bytes, buffer_bytes / 2,
                                         ROCPROFILER_BUFFER_POLICY_LOSSLESS, &on_buffer<Sink>,
                                         this, &buffer_),
               "creating a record buffer"))
      return;
    if (W::completions)
      check(rocprofiler_configure_buffer_tracing_service(
                context_, ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH, nullptr, 0, buffer_),
            "kernel dispatch records");
    if (W::copies)
      check(rocprofiler_configure_buffer_tracing_service(
                context_, ROCPROFILER_BUFFER_TRACING_MEMORY_COPY, nullptr, 0, buffer_),
            "memory copy records");
  }
}

inline void Rocprofiler::stop() {
  if (!active_) return;
  active_ = false;
  const pasta::detail::OpCorrelator* ours = &op_hooks;
  pasta::detail::op_correlator().compare_exchange_strong(ours, nullptr);
  check(rocprofiler_stop_context(context_), "stopping the context");
  if (buffer_.handle) check(rocprofiler_flush_buffer(buffer_), "flushing the last records");
  pasta::detail::set_clock(nullptr);
  current() = nullptr;
}

template <class Sink>
void Rocprofiler::on_callback(rocprofiler_callback_tracing_record_t record,
                              rocprofiler_user_data_t* user_data, void* self_ptr) {
  auto& self = *static_cast<Rocprofiler*>(self_ptr);
  if (!self.active_) return;
  Sink& sink = *static_cast<Sink*>(self.sink_);
  switch (record.kind) {
    case ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT:
      if (record.phase != ROCPROFILER_CALLBACK_PHASE_LOAD) return;
      if (record.operation == ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER) {
        const auto& s = *static_cast<
            const rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t*>(
            record.payload);
        self.kernel_names_.add(s.kernel_id, s.kernel_name);
      } else if (record.operation == ROCPROFILER_CODE_OBJECT_LOAD) {
        if constexpr (Sink::template wants<ModuleLoad>()) {
          const auto& d = *static_cast<const rocprofiler_callback_tracing_code_object_load_data_t*>(
              record.payload);
          sink.emit(
              detail::module_load(d, d.storage_type == ROCPROFILER_CODE_OBJECT_STORAGE_TYPE_MEMORY,
                                  self.agents_.device(d.rocp_agent.handle), clock()));
        }
      }
      return;
    case ROCPROFILER_CALLBACK_TRACING_KERNEL_DISPATCH:
      if constexpr (Sink::template wants<KernelLaunch>()) {
        if (record.operation != ROCPROFILER_KERNEL_DISPATCH_ENQUEUE ||
            record.phase != ROCPROFILER_CALLBACK_PHASE_ENTER)
          return;
        const auto& d =
            static_cast<const rocprofiler_callback_tracing_kernel_dispatch_data_t*>(record.payload)
                ->dispatch_info;
        sink.emit(detail::kernel_launch(d, self.kernel_names_.find(d.kernel_id),
                                        self.agents_.device(d.agent_id.handle),
                                        static_cast<std::uint32_t>(record.thread_id), clock()));
      }
      return;
    case ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API:
      self.on_hip<Sink>(record, user_data);
      return;
    case ROCPROFILER_CALLBACK_TRACING_MARKER_CORE_API:
      if (record.operation == ROCPROFILER_MARKER_CORE_API_ID_roctxRangePushA &&
          record.phase == ROCPROFILER_CALLBACK_PHASE_ENTER) {
        const char* msg =
            static_cast<const rocprofiler_callback_tracing_marker_api_data_t*>(record.payload)
                ->args.roctxRangePushA.message;
        pasta::detail::scope_enter(intern(msg ? msg : "(unnamed ROCTx range)"), false);
      } else if (record.operation == ROCPROFILER_MARKER_CORE_API_ID_roctxRangePop &&
                 record.phase == ROCPROFILER_CALLBACK_PHASE_EXIT) {
        pasta::detail::scope_exit(false);
      }
      return;
    default:
      return;
  }
}

template <class Sink>
void Rocprofiler::on_hip(const rocprofiler_callback_tracing_record_t& record,
                         rocprofiler_user_data_t* data) {
  if (record.phase == ROCPROFILER_CALLBACK_PHASE_ENTER) {
    data->value = clock();  // the call's start, for its exit phase
    return;
  }
  const auto& api =
      *static_cast<const rocprofiler_callback_tracing_hip_api_data_t*>(record.payload);
  if (api.retval.hipError_t_retval != hipSuccess) return;  // the call did nothing
  const detail::HipCall call = detail::hip_call_of(record.operation);
  const std::uint64_t start = data->value, end = clock();
  if (call == detail::HipCall::set_device) {
    current_device() = static_cast<std::uint32_t>(api.args.hipSetDevice.deviceId);
    return;
  }
  Sink& sink = *static_cast<Sink*>(sink_);
  const std::uint32_t device = current_device();
  if (detail::allocates(call)) {
    if (auto m = detail::mem_alloc(call, api.args, device, end)) {
      live_.add(*m);
      if constexpr (Sink::template wants<MemAlloc>()) sink.emit(*m);
    }
  } else if (detail::frees(call)) {
    if (auto m = detail::mem_free(call, api.args, device, start)) {
      live_.remove(*m);
      if constexpr (Sink::template wants<MemFree>()) sink.emit(*m);
    }
  } else if (detail::sets_memory(call)) {
    if constexpr (Sink::template wants<Memset>())
      if (auto m = detail::memset_of(call, api.args, record.correlation_id.internal, device, start,
                                     end, record.correlation_id.external.value))
        sink.emit(*m);
  } else if constexpr (Sink::template wants<Synchronize>()) {
    if (auto s = detail::synchronize_of(call, api.args, device,
                                        static_cast<std::uint32_t>(record.thread_id), start, end))
      sink.emit(*s);
  }
}

template <class Sink>
void Rocprofiler::on_buffer(rocprofiler_context_id_t, rocprofiler_buffer_id_t,
                            rocprofiler_record_header_t** headers, std::size_t count,
                            void* self_ptr, std::uint64_t dropped) {
  auto& self = *static_cast<Rocprofiler*>(self_ptr);
  if (dropped) self.dropped_.fetch_add(dropped, std::memory_order_relaxed);
  Sink& sink = *static_cast<Sink*>(self.sink_);
  sink.batch([&](auto& s) {
    for (std::size_t i = 0; i < count; ++i) {
      const rocprofiler_record_header_t& h = *headers[i];
      if (h.category != ROCPROFILER_BUFFER_CATEGORY_TRACING) continue;
      if (h.kind == ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH) {
        if constexpr (Sink::template wants<KernelComplete>()) {
          const auto& r =
              *static_cast<const rocprofiler_buffer_tracing_kernel_dispatch_record_t*>(h.payload);
          s.emit(detail::kernel_complete(r, self.kernel_names_.find(r.dispatch_info.kernel_id),
                                         self.agents_.device(r.dispatch_info.agent_id.handle)));
        }
      } else if (h.kind == ROCPROFILER_BUFFER_TRACING_MEMORY_COPY) {
        if constexpr (Sink::template wants<Memcpy>())
          s.emit(detail::memcpy_of(
              *static_cast<const rocprofiler_buffer_tracing_memory_copy_record_t*>(h.payload),
              self.agents_));
      }
    }
  });
}

}  // namespace pasta::amd
