// Cupti's CUPTI callback, and the function each callback domain goes to:
// counters and PC sampling first when a tool wants them, then NVTX ranges,
// module loads and graph nodes (resource domain), runtime and driver calls
// (synchronisations flush and are reported, launches are tagged with their
// operator and reported). The class is handler.hpp; pasta/nv/cupti.hpp
// includes both.
#pragma once

#include <pasta/nv/cupti/handler.hpp>

namespace pasta::nv {

template <class Sink>
void CUPTIAPI Cupti::on_callback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void* data) {
  auto* self = static_cast<Cupti*>(user);
  if constexpr (Sink::template wants<KernelCounters>())
    if (self->counters_.on_any_callback(static_cast<Sink*>(self->sink_), domain, cbid, data,
                                        self->records_.own_calls()))
      return;
  if (pasta::detail::inside_dispatch() || !self->active_) return;  // pasta's own device work
  pasta::detail::SelfTimer timer(self->self_time_ ? &self->stats_.callback_time : nullptr);
  Sink& sink = *static_cast<Sink*>(self->sink_);
  try {
    if constexpr (Sink::template wants<KernelCounters>())
      if (self->counters_.on_callback(sink, domain, cbid, data)) return;
    if constexpr (Sink::template wants<StallSample>())
      self->sampling_.on_callback(sink, domain, cbid, data);
    self->stats_.callbacks.fetch_add(1, std::memory_order_relaxed);
    switch (domain) {
      case CUPTI_CB_DOMAIN_NVTX:
        detail::on_nvtx(cbid, *static_cast<const CUpti_NvtxData*>(data));
        break;
      case CUPTI_CB_DOMAIN_RESOURCE:
        if (self->tag_ops_ && detail::is_graph_callback(cbid))
          detail::on_graph_callback(self->records_.graph_ops(), cbid,
                                    *static_cast<const CUpti_ResourceData*>(data), self->verbose_);
        else
          self->on_module(sink, cbid, *static_cast<const CUpti_ResourceData*>(data));
        break;
      case CUPTI_CB_DOMAIN_RUNTIME_API:
        self->on_runtime(sink, cbid, *static_cast<const CUpti_CallbackData*>(data));
        break;
      case CUPTI_CB_DOMAIN_DRIVER_API:
        self->on_driver(sink, cbid, *static_cast<const CUpti_CallbackData*>(data));
        break;
      default:
        break;
    }
  } catch (const std::exception& e) {
    pasta::detail::log_once("cupti:callback", fmt::format("a CUPTI callback failed: {}", e.what()));
  } catch (...) {
  }
}

template <class Sink>
void Cupti::on_module(Sink& sink, CUpti_CallbackId cbid, const CUpti_ResourceData& r) {
  if (cbid != CUPTI_CBID_RESOURCE_MODULE_LOADED) return;
  const auto* m = static_cast<const CUpti_ModuleResourceData*>(r.resourceDescriptor);
  std::uint32_t device = 0;
  cuptiGetDeviceId(r.context, &device);
  if constexpr (Sink::template wants<ModuleLoad>())
    sink.emit(ModuleLoad{.device = device,
                         .module = m ? m->moduleId : 0,
                         .image_bytes = m ? m->cubinSize : 0,
                         .time_ns = detail::cupti_clock()});
  if constexpr (Sink::template wants<ModuleImage>())
    if (m && m->pCubin && m->cubinSize)
      sink.emit(ModuleImage{.device = device,
                            .module = m->moduleId,
                            .image = reinterpret_cast<const std::byte*>(m->pCubin),
                            .image_bytes = m->cubinSize});
}

template <class Sink>
void Cupti::on_runtime(Sink& sink, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  const bool enter = cb.callbackSite == CUPTI_API_ENTER;
  if (const auto* sync = detail::sync_call(CUPTI_CB_DOMAIN_RUNTIME_API, cbid)) {
    on_sync(sink, *sync, cb);
    return;
  }
  if (enter && tag_ops_) records_.tag_with_op(cb.correlationId);
  if (!detail::is_launch(CUPTI_CB_DOMAIN_RUNTIME_API, cbid)) return;
  if (!detail::runtime_launch_callback(cb) || !host_launches_ ||
      !pasta::detail::capture_window().open())
    return;
  if constexpr (Sink::template wants<KernelLaunch>())
    if (const auto shape =
            detail::launch_shape(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, cb.functionParams))
      detail::emit_launch(sink, cb, *shape,
                          detail::per_thread_stream(CUPTI_CB_DOMAIN_RUNTIME_API, cbid));
}

template <class Sink>
void Cupti::on_driver(Sink& sink, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  const bool enter = cb.callbackSite == CUPTI_API_ENTER;
  if (last_pending_.load(std::memory_order_relaxed)) {  // every driver call until CUPTI goes
    if (!enter) detach_last();
    return;
  }
  if (profiler_api_ && (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart ||
                        cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop)) {
    const bool stop = cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop;
    auto& window = pasta::detail::capture_window();
    // A stop with no window open, after a detach: its start came while
    // CUPTI was being attached again (Cupti::detach). Windows come too close
    // together for detaching: CUPTI stays attached from now on.
    if (detach_ && stop && enter && !window.open() && stats_.detaches.load() > 0) {
      stats_.missed_windows.fetch_add(1, std::memory_order_relaxed);
      detach_ = false;
    }
    window.profiler_api_callback(!stop, !enter);
    if (detach_ && stop && !enter) detach();
    return;
  }
  if (const auto* sync = detail::sync_call(CUPTI_CB_DOMAIN_DRIVER_API, cbid)) {
    on_sync(sink, *sync, cb);
    return;
  }
  if (enter && tag_ops_) records_.tag_with_op(cb.correlationId);
  if (!enter || !detail::reported_launch_entry(CUPTI_CB_DOMAIN_DRIVER_API, cb) ||
      !host_launches_ || !pasta::detail::capture_window().open())
    return;  // the runtime launch was reported, or the launch is outside the window
  if constexpr (Sink::template wants<KernelLaunch>())
    if (const auto shape =
            detail::launch_shape(CUPTI_CB_DOMAIN_DRIVER_API, cbid, cb.functionParams))
      detail::emit_launch(sink, cb, *shape,
                          detail::per_thread_stream(CUPTI_CB_DOMAIN_DRIVER_API, cbid));
}

// A synchronising call: its flush, and its event (sync_callbacks.hpp) for a
// call that began inside the capture window.
template <class Sink>
void Cupti::on_sync(Sink& sink, const detail::SyncCall& call, const CUpti_CallbackData& cb) {
  const bool enter = cb.callbackSite == CUPTI_API_ENTER;
  if (!enter && call.device_wide && flush_on_sync_) activity_.request_flush();
  if constexpr (Sink::template wants<Synchronize>()) {
    if (!sync_events_) return;
    if (enter) {
      if (pasta::detail::capture_window().open()) detail::sync_enter(call, detail::cupti_clock());
    } else if (const auto start = detail::sync_exit(call)) {
      sink.emit(detail::sync_event(call, cb, *start));
    }
  }
}

}  // namespace pasta::nv
