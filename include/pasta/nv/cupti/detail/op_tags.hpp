// Operators on nv::Cupti's device work: operator sources (torch::Aten) keep
// the calling thread's operator, and the callback of each launch, copy and
// memset call (and graph launch) records its correlation id with that
// operator; the device record of the call then finds it. The thread's
// operator path is kept for the counters' signatures.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include <pasta/core/detail/op_correlation.hpp>
#include <pasta/core/names.hpp>
#include <pasta/nv/detail/cupti_api.hpp>

namespace pasta::nv::detail {

// The calling thread's open operators, innermost last.
inline std::vector<std::uint64_t>& open_ops() {
  thread_local std::vector<std::uint64_t> ops;
  return ops;
}
// The calling thread's operator path, one hash a level (signatures of the
// launches counters measure).
inline std::vector<std::uint64_t>& op_paths() {
  thread_local std::vector<std::uint64_t> paths;
  return paths;
}
inline void op_enter(std::uint64_t op, NameId name) {
  open_ops().push_back(op);
  auto& paths = op_paths();
  paths.push_back(pasta::detail::op_path_step(paths.empty() ? 0 : paths.back(), name));
}
inline void op_exit() {
  if (auto& ops = open_ops(); !ops.empty()) ops.pop_back();
  if (auto& paths = op_paths(); !paths.empty()) paths.pop_back();
}
inline constexpr pasta::detail::OpCorrelator op_hooks{&op_enter, &op_exit};

// The innermost operator open on the calling thread, 0 if none: the
// operator source's own stack, or the one its hooks keep here.
inline std::uint64_t current_op() {
  if (const auto* stack = pasta::detail::op_stack().load(std::memory_order_acquire))
    return stack->innermost();
  const auto& ops = open_ops();
  return ops.empty() ? 0 : ops.back();
}
// The calling thread's operator path (op_paths' last), 0 if none.
inline std::uint64_t current_op_path() {
  if (const auto* stack = pasta::detail::op_stack().load(std::memory_order_acquire))
    return stack->path();
  const auto& paths = op_paths();
  return paths.empty() ? 0 : paths.back();
}

// Whether a runtime or driver API function puts work on the device that a
// device record will report: a launch (graphs too), a copy or a memset.
inline bool makes_device_work(std::string_view api) {
  for (std::string_view prefix : {"cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset",
                                  "cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset"})
    if (api.starts_with(prefix)) return true;
  return false;
}
// Whether the tags take the callback of `api` in `domain`: the driver's
// calls that make device work, and the runtime's copies and memsets
// (enable_tag_callbacks says why not its launches).
inline bool tag_callback(CUpti_CallbackDomain domain, std::string_view api) {
  return makes_device_work(api) &&
         (domain == CUPTI_CB_DOMAIN_DRIVER_API || api.starts_with("cudaMemcpy") ||
          api.starts_with("cudaMemset"));
}

// Turns on (or off) the driver's callbacks of every such function (found by
// name, so new variants are covered), and the runtime's of its copies and
// memsets; returns how many. Not the runtime's launches: a runtime launch
// puts its kernel on the device through a driver call whose callback carries
// the runtime call's correlation id, the one the kernel's record has
// (bench/gpu/probe/launch_callbacks.cu `map`, `map-drv`), and the runtime's
// callbacks cost a launch 120-340 ns more on an H200 (`paired`). Copies and
// memsets, far fewer, keep both: the probe checked launches only.
inline int enable_tag_callbacks(CUpti_SubscriberHandle subscriber, bool on = true) {
  int enabled = 0;
  for (auto [domain, size] : {std::pair{CUPTI_CB_DOMAIN_RUNTIME_API,
                                        std::uint32_t{CUPTI_RUNTIME_TRACE_CBID_SIZE}},
                              std::pair{CUPTI_CB_DOMAIN_DRIVER_API,
                                        std::uint32_t{CUPTI_DRIVER_TRACE_CBID_SIZE}}}) {
    for (std::uint32_t cbid = 1; cbid < size; ++cbid) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name ||
          !tag_callback(domain, name))
        continue;
      if (cuptiEnableCallback(on ? 1 : 0, subscriber, domain, cbid) == CUPTI_SUCCESS) ++enabled;
    }
  }
  return enabled;
}

}  // namespace pasta::nv::detail
