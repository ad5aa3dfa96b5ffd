// libpasta_bench_aten_tools.so: bench/aten_ops.cpp's queued tools in a shared library that the
// program loads with dlopen, as the CUDA driver loads `pasta run --torch`'s library
// (CUDA_INJECTION64_PATH), built with the same visibility: its thread-local state is reached
// the way the real library reaches it, which an executable's is not.
#include "aten_ops_tools.hpp"

extern "C" __attribute__((visibility("default"))) void* pasta_bench_aten_tools_start() {
  return new pasta_bench::Queued();
}

extern "C" __attribute__((visibility("default"))) void pasta_bench_aten_tools_stop(void* tools) {
  auto* queued = static_cast<pasta_bench::Queued*>(tools);
  queued->stop();
  delete queued;
}

// cudaProfilerStart (open) or Stop, as the library's own capture window sees it (the paired mode
// of bench/aten_ops.cpp, under PASTA_CAPTURE_RANGE=cudaProfilerApi).
extern "C" __attribute__((visibility("default"))) void pasta_bench_aten_tools_window(int open) {
  pasta::detail::capture_window().profiler_api(open != 0);
}
