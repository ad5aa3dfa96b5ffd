// What the Sanitizer handler does at each kernel launch: launch_begin reports
// the launch, selects the kernel, patches its module and arms the device
// buffers; launch_end waits for the kernel, reads the buffers back (accesses
// or their reductions) and reports the kernel complete.
// The class is handler.hpp; pasta/nv/sanitizer.hpp includes both.
#pragma once

#include <pasta/nv/sanitizer/handler.hpp>

namespace pasta::nv {

template <class Sink>
void Sanitizer::launch_begin(Sink& sink, const Sanitizer_LaunchData& d) {
  stats_.launches.fetch_add(1, std::memory_order_relaxed);
  Launch& l = this_launch();
  l = Launch{.correlation = next_correlation_.fetch_add(1, std::memory_order_relaxed),
             .name = kernel_name(d.functionName),
             .device = static_cast<std::uint32_t>(d.device),
             .grid = {d.gridDim_x, d.gridDim_y, d.gridDim_z},
             .block = {d.blockDim_x, d.blockDim_y, d.blockDim_z},
             .in_window = pasta::detail::capture_window().open()};
  if constexpr (Sink::template wants<KernelLaunch>())
    if (l.in_window)
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
    selected = l.in_window && selector_.select(l.name);
  }
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (selected && d.stream &&
      detail::loaded_driver().stream_is_capturing(d.stream, &capture) == CUDA_SUCCESS &&
      capture != CU_STREAM_CAPTURE_STATUS_NONE)
    selected = false;  // captured into a graph, not run: nothing to count now
  const bool patched = patcher_.patched(d.module);
  if (!selected) {
    // A patched module runs its patches on every launch: tell them to do nothing.
    if (patched) api().sanitizerSetLaunchCallbackData(d.hLaunch, d.function, d.hStream, nullptr);
    return;
  }
  launch_mutex_.lock();  // released in launch_end
  try {
    detail::ContextState& c = context(d.context);
    if (!patched) patch_module(c, d.module);
    const AccessRegions* regions =
        mode_ == Mode::pcs ? &buffers_.regions_for(sink, l.correlation) : nullptr;
    if (!buffers_.prepare(c, d, mode_, cfg_.trace_buffer_bytes, regions)) {
      launch_mutex_.unlock();
      return;
    }
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
        buffers_.collect_histogram(sink, d, l);
      else if (mode_ == Mode::pcs && cfg_.access_patch != AccessPatch::noop)
        buffers_.collect_pcs(sink, d, l, cfg_.trace_buffer_bytes);
      else if (mode_ == Mode::trace && cfg_.access_patch != AccessPatch::noop)
        buffers_.collect_trace(sink, d, l);
      else
        detail::check(api().sanitizerStreamSynchronize(d.hStream), "waiting for the kernel");
    } catch (...) {
      stats_.post_ns.fetch_add(pasta::detail::steady_ns() - t0, std::memory_order_relaxed);
      throw;
    }
    stats_.post_ns.fetch_add(pasta::detail::steady_ns() - t0, std::memory_order_relaxed);
  }
  if constexpr (Sink::template wants<KernelComplete>())
    if (l.in_window)
      sink.emit(KernelComplete{.correlation = l.correlation,
                               .context = reinterpret_cast<std::uint64_t>(d.context),
                               .stream = reinterpret_cast<std::uint64_t>(d.stream),
                               .device = l.device,
                               .name = l.name,
                               .grid = l.grid,
                               .block = l.block});
}

}  // namespace pasta::nv
