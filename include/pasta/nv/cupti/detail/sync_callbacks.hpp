// nv::Cupti's callbacks on the calls that synchronise. A device-wide one
// asks for a flush (PASTA_FLUSH_ON_SYNC), and each one is a Synchronize
// event when a tool wants them. pasta takes synchronisations from these
// callbacks rather than from CUPTI's synchronization records: with that
// record kind on, a launch-bound PyTorch step ran 1.33x slower inside a
// capture window instead of 1.13x without it (docs/benchmarks.md), while a
// callback costs only at the call that synchronises
// (PASTA_CUPTI_SYNC=records takes CUPTI's records again).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>

#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/detail/thread.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/nv/detail/cupti_api.hpp>

namespace pasta::nv::detail {

struct SyncCall {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  SyncKind kind;
  bool stream;       // its parameters start with the stream it waits on (or makes wait)
  bool per_thread;   // ... where stream 0 is the calling thread's default stream
  bool device_wide;  // it waits for all of a context's work: a flush follows
};
inline constexpr std::array<SyncCall, 14> sync_calls{{
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
     SyncKind::context, false, false, true},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020,
     SyncKind::context, false, false, true},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
     SyncKind::stream, true, false, false},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
     SyncKind::stream, true, true, false},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
     SyncKind::event, false, false, false},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
     SyncKind::event, true, false, false},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000,
     SyncKind::event, true, true, false},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, SyncKind::context, false,
     false, true},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2, SyncKind::context,
     false, false, true},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, SyncKind::stream,
     true, false, false},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz, SyncKind::stream,
     true, true, false},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, SyncKind::event, false,
     false, false},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, SyncKind::event, true,
     false, false},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz, SyncKind::event,
     true, true, false},
}};

template <CUpti_CallbackDomain Domain, std::size_t N>
constexpr std::array<std::int8_t, N> sync_index() {
  std::array<std::int8_t, N> index{};
  index.fill(-1);
  for (std::size_t i = 0; i < sync_calls.size(); ++i)
    if (sync_calls[i].domain == Domain) index[sync_calls[i].cbid] = static_cast<std::int8_t>(i);
  return index;
}

// The synchronising call `cbid` is, or nullptr: a table look-up, since every
// runtime and driver callback asks.
inline const SyncCall* sync_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  static constexpr auto runtime =
      sync_index<CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE>();
  static constexpr auto driver =
      sync_index<CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE>();
  std::int8_t i = -1;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < runtime.size()) i = runtime[cbid];
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < driver.size()) i = driver[cbid];
  return i < 0 ? nullptr : &sync_calls[static_cast<std::size_t>(i)];
}

// every: each synchronising call (for Synchronize events); otherwise the
// device-wide ones only (for the flush).
inline void enable_sync_callbacks(CUpti_SubscriberHandle subscriber, bool every = false) {
  for (const SyncCall& c : sync_calls)
    if (every || c.device_wide)
      cupti_ok(cuptiEnableCallback(1, subscriber, c.domain, c.cbid), "a synchronisation callback");
}

// The stream a call's parameters name (nullptr, the legacy default stream,
// for a call without one).
inline CUstream sync_stream(const SyncCall& call, const void* params) {
  CUstream stream = nullptr;
  if (call.stream && params) std::memcpy(&stream, params, sizeof stream);
  return stream;
}

// The synchronising call under way on this thread: the outermost one, since
// a runtime call's driver call under it is the same synchronisation.
struct SyncInFlight {
  const SyncCall* call = nullptr;
  std::uint64_t start_ns = 0;
};
inline SyncInFlight& sync_in_flight() {
  static thread_local SyncInFlight in_flight PASTA_FAST_TLS;
  return in_flight;
}
// At a call's enter: it begins a synchronisation unless it runs under one.
inline void sync_enter(const SyncCall& call, std::uint64_t now_ns) {
  SyncInFlight& f = sync_in_flight();
  if (f.call && f.call->domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
      call.domain == CUPTI_CB_DOMAIN_DRIVER_API)
    return;
  f = {&call, now_ns};
}
// At a call's exit: when the synchronisation it ends began, if it ends one.
inline std::optional<std::uint64_t> sync_exit(const SyncCall& call) {
  SyncInFlight& f = sync_in_flight();
  if (f.call != &call) return std::nullopt;
  f.call = nullptr;
  return f.start_ns;
}

// The event of a synchronising call that began at start_ns and returns now.
inline Synchronize sync_event(const SyncCall& call, const CUpti_CallbackData& cb,
                              std::uint64_t start_ns) {
  std::uint32_t device = 0;
  cuptiGetDeviceId(cb.context, &device);
  return {.sync_kind = call.kind,
          .device = device,
          .context = cb.contextUid,
          .stream = call.stream ? cupti_stream_id(cb.context, sync_stream(call, cb.functionParams),
                                                  call.per_thread, "synchronisation")
                                : 0,
          .thread = pasta::detail::thread_id(),
          .start_ns = start_ns,
          .end_ns = cupti_clock()};
}

}  // namespace pasta::nv::detail
