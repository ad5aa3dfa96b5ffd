// libpasta_bench_ring_ops.so: ring_ops.hpp's callback for a Python program
// (bench/gpu/torch_step.py --ring-ops), on while a window is open.
#include <cstdint>

#include "ring_ops.hpp"

namespace {
at::CallbackHandle handle = 0;
}

extern "C" {
// Adds the record's callback (on = 1) or the one that does nothing (2), or
// removes it (0).
__attribute__((visibility("default"))) void pasta_bench_ring_ops_on(int on) {
  if (on && !handle) handle = pasta_bench::ring::add(on == 2);
  if (!on && handle) {
    at::removeCallback(handle);
    handle = 0;
  }
}
// Operator starts recorded while it was on.
__attribute__((visibility("default"))) std::uint64_t pasta_bench_ring_ops_starts() {
  return pasta_bench::ring::starts();
}
}
