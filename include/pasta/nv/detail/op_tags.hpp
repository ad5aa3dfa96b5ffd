// Operators on nv::Cupti's device work: operator sources (torch::Aten) tag
// the calling thread's CUDA work with the operator through CUPTI's external
// correlation ids, and keep the thread's operator path for the counters.
#pragma once

#include <cstdint>
#include <vector>

#include <pasta/core/detail/hash.hpp>
#include <pasta/core/detail/op_correlation.hpp>
#include <pasta/core/names.hpp>
#include <pasta/nv/detail/cupti_api.hpp>

namespace pasta::nv::detail {

// The kind PyTorch's own profiler leaves free.
inline constexpr auto op_kind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;

// The calling thread's operator path, one hash a level (signatures of the
// launches counters measure).
inline std::vector<std::uint64_t>& op_paths() {
  thread_local std::vector<std::uint64_t> paths;
  return paths;
}
inline void op_enter(std::uint64_t op, NameId name) {
  cuptiActivityPushExternalCorrelationId(op_kind, op);
  auto& paths = op_paths();
  paths.push_back(pasta::detail::fnv_step(paths.empty() ? pasta::detail::fnv_offset : paths.back(),
                                          name.value + 1ull));
}
inline void op_exit() {
  std::uint64_t last = 0;
  cuptiActivityPopExternalCorrelationId(op_kind, &last);
  if (auto& paths = op_paths(); !paths.empty()) paths.pop_back();
}
inline constexpr pasta::detail::OpCorrelator op_hooks{&op_enter, &op_exit};

}  // namespace pasta::nv::detail
