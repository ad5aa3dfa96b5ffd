// Managed memory first touched on the GPU, the case tools::UvmHotness
// advises on. Two cudaMallocManaged arrays x, y (--mb MiB each, default 512,
// never more than a quarter of the GPU's free memory): `init` writes both,
// then `axpy` runs 3 times. With --advise the program applies what
// UvmHotness reports for it: cudaMemAdvise(preferred location: this GPU) and
// cudaMemPrefetchAsync of each array before `init`. Prints one JSON line
// with the time of init + axpys (launch to synchronise) and a checksum that
// must not change. Built plain, and with -DPASTA_PROFILE (nv::Sanitizer +
// GpuBucketing + UvmHotness + MemHotness in main).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(PASTA_PROFILE) || defined(PASTA_PROFILE_CPU)
#include "../profiler.hpp"
#endif

#include "check.cuh"

__global__ void init(float* x, float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    x[i] = 1e-3f * static_cast<float>(i % 1000);
    y[i] = 1.0f;
  }
}

__global__ void axpy(float a, const float* x, float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    y[i] += a * x[i];
}

static void advise(void* p, std::size_t bytes, int device) {
#if CUDART_VERSION >= 13000
  cudaMemLocation here{cudaMemLocationTypeDevice, device};
  CHECK(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, here));
  CHECK(cudaMemPrefetchAsync(p, bytes, here, 0, 0));
#else
  CHECK(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, device));
  CHECK(cudaMemPrefetchAsync(p, bytes, device, 0));
#endif
}

int main(int argc, char** argv) {
#if defined(PASTA_PROFILE) || defined(PASTA_PROFILE_CPU)
  const auto prof = make_profiler();  // uvm_advice_profiler.cpp
#endif
  std::size_t mb = 512;
  bool with_advice = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--advise")) with_advice = true;
    if (!std::strcmp(argv[i], "--mb") && i + 1 < argc) mb = std::strtoull(argv[++i], nullptr, 10);
  }
  int device = 0;
  CHECK(cudaGetDevice(&device));
  std::size_t free_bytes = 0, total = 0;
  CHECK(cudaMemGetInfo(&free_bytes, &total));
  std::size_t bytes = mb << 20;
  if (2 * bytes > free_bytes / 4) {
    bytes = (free_bytes / 8) & ~((std::size_t(2) << 20) - 1);
    std::fprintf(stderr, "uvm_advice: %zu MiB per array (a quarter of the free GPU memory)\n",
                 bytes >> 20);
  }
  const std::size_t n = bytes / sizeof(float);
  float *x, *y;
  CHECK(cudaMallocManaged(&x, bytes));
  CHECK(cudaMallocManaged(&y, bytes));
  CHECK(cudaDeviceSynchronize());

  const auto t0 = std::chrono::steady_clock::now();
  if (with_advice) {
    advise(x, bytes, device);
    advise(y, bytes, device);
  }
  init<<<1024, 256>>>(x, y, n);
  for (int r = 0; r < 3; ++r) axpy<<<1024, 256>>>(0.5f, x, y, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  double sum = 0;  // every 4096th element: the host touches few pages
  for (std::size_t i = 0; i < n; i += 4096) sum += y[i];
  std::printf("{\"mb_per_array\": %zu, \"advised\": %s, \"gpu_ms\": %.3f, \"checksum\": %.6f}\n",
              bytes >> 20, with_advice ? "true" : "false", ms, sum);
  std::printf("buffer x %p %zu\nbuffer y %p %zu\n", static_cast<void*>(x), bytes,
              static_cast<void*>(y), bytes);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  return 0;
}
