// How an operator source (torch::Aten) tells a device handler (nv::Cupti)
// which operator the calling thread is in, so device work is tagged with it
// without a callback per launch. The device handler installs the hooks while
// it runs; with none installed, operator sources skip the calls.
#pragma once

#include <atomic>
#include <cstdint>

#include <pasta/core/names.hpp>

namespace pasta::detail {

struct OpCorrelator {
  void (*enter)(std::uint64_t op, NameId name);  // the calling thread enters operator `op`
  void (*exit)();                                // ... and leaves the innermost one it entered
};

inline std::atomic<const OpCorrelator*>& op_correlator() {
  static std::atomic<const OpCorrelator*> hooks{nullptr};
  return hooks;
}

}  // namespace pasta::detail
