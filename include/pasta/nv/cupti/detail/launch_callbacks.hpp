// nv::Cupti's runtime and driver API callbacks for kernel launches: which
// callback ids launch a kernel, and what a launch call's parameters say
// (grid, block, shared memory, stream), for KernelLaunch and the counters.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include <pasta/core/detail/hash.hpp>
#include <pasta/core/detail/thread.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/names.hpp>
#include <pasta/nv/detail/cupti_api.hpp>
#include <pasta/nv/cupti/detail/op_tags.hpp>

namespace pasta::nv::detail {

inline constexpr std::array<CUpti_CallbackId, 6> runtime_launches{
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000};
inline constexpr std::array<CUpti_CallbackId, 6> driver_launches{
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};
inline bool is_launch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
    return std::ranges::find(runtime_launches, cbid) != runtime_launches.end();
  return domain == CUPTI_CB_DOMAIN_DRIVER_API &&
         std::ranges::find(driver_launches, cbid) != driver_launches.end();
}
inline void enable_launch_callbacks(CUpti_SubscriberHandle subscriber) {
  for (CUpti_CallbackId id : runtime_launches)
    cupti_ok(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id),
             "a runtime launch callback");
  for (CUpti_CallbackId id : driver_launches)
    cupti_ok(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id),
             "a driver launch callback");
}
inline int& runtime_depth() {  // inside a runtime launch: skip the driver launch under it
  static thread_local int depth PASTA_FAST_TLS = 0;
  return depth;
}
// Inside a runtime launch whose entry had no context: a thread's first
// runtime call, before the runtime made the primary context current there
// (PyTorch's autograd thread launches its first kernel so). The driver launch
// under it, which has the context, is the one reported.
inline bool& runtime_launch_without_context() {
  static thread_local bool on PASTA_FAST_TLS = false;
  return on;
}
// Whether a launch callback's entry is where its launch is reported: a
// runtime launch with a context (`runtime_depth()` not yet counting it), or
// a driver launch outside every runtime launch or under one without context.
inline bool reported_launch_entry(CUpti_CallbackDomain domain, const CUpti_CallbackData& cb) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return runtime_depth() == 0 && cb.context;
  return runtime_depth() == 0 || runtime_launch_without_context();
}
// At a runtime launch's entry or exit callback, after the counters asked
// reported_launch_entry(): keeps the thread's depth and context state, and
// returns whether this entry reports the launch.
inline bool runtime_launch_callback(const CUpti_CallbackData& cb) {
  const bool enter = cb.callbackSite == CUPTI_API_ENTER;
  const bool reported = enter && reported_launch_entry(CUPTI_CB_DOMAIN_RUNTIME_API, cb);
  runtime_depth() += enter ? 1 : -1;
  runtime_launch_without_context() = enter && !cb.context;
  return reported;
}

// Grid, block, shared memory and stream of a launch callback's call.
struct LaunchShape {
  Dim3 grid, block;
  std::uint32_t shared = 0;
  CUstream stream = nullptr;
};
inline std::optional<LaunchShape> launch_shape(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                               const void* params) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
        // The cooperative launch's parameters have the same layout.
        const auto* p = static_cast<const RuntimeLaunchParams*>(params);
        return LaunchShape{{p->gridDim.x, p->gridDim.y, p->gridDim.z},
                           {p->blockDim.x, p->blockDim.y, p->blockDim.z},
                           static_cast<std::uint32_t>(p->sharedMem),
                           reinterpret_cast<CUstream>(p->stream)};
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
        const auto* c = static_cast<const RuntimeLaunchExParams*>(params)->config;
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
      const auto* p = static_cast<const DriverLaunchParams*>(params);
      return LaunchShape{{p->gridDimX, p->gridDimY, p->gridDimZ},
                         {p->blockDimX, p->blockDimY, p->blockDimZ},
                         p->sharedMemBytes,
                         p->hStream};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto* c = static_cast<const DriverLaunchExParams*>(params)->config;
      return LaunchShape{{c->gridDimX, c->gridDimY, c->gridDimZ},
                         {c->blockDimX, c->blockDimY, c->blockDimZ},
                         c->sharedMemBytes,
                         c->hStream};
    }
    default:
      return std::nullopt;
  }
}
// A launch API whose stream 0 is the thread's own default stream.
inline bool per_thread_stream(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000;
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz;
}
// What the counters deduplicate on: kernel, grid, block, operator path.
inline std::uint64_t signature(const CUpti_CallbackData& cb, const LaunchShape& s) {
  std::uint64_t h = std::hash<std::string_view>{}(cb.symbolName ? cb.symbolName : "");
  for (std::uint64_t v : {std::uint64_t{s.grid.x}, std::uint64_t{s.grid.y}, std::uint64_t{s.grid.z},
                          std::uint64_t{s.block.x}, std::uint64_t{s.block.y},
                          std::uint64_t{s.block.z}, current_op_path()})
    h = pasta::detail::fnv_step(h, v);
  return h;
}

// The KernelLaunch of a launch call; per_thread: a _ptsz call (per_thread_stream).
template <class Sink>
void emit_launch(Sink& sink, const CUpti_CallbackData& cb, const LaunchShape& s, bool per_thread) {
  std::uint32_t device = 0;
  cuptiGetDeviceId(cb.context, &device);
  sink.emit(KernelLaunch{.correlation = cb.correlationId,
                         .context = cb.contextUid,
                         .stream = cupti_stream_id(cb.context, s.stream, per_thread, "launch"),
                         .device = device,
                         .name = cb.symbolName ? intern(cb.symbolName) : NameId{},
                         .grid = s.grid,
                         .block = s.block,
                         .shared_mem_bytes = s.shared,
                         .thread = pasta::detail::thread_id(),
                         .time_ns = cupti_clock()});
}

}  // namespace pasta::nv::detail
