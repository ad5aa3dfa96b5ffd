// A user's CUDA program with a pasta profiler composed in main, built by a
// project of its own the way docs/user-guide.md says (FetchContent or
// find_package, CMake's default CUDA architectures, no flag added by hand).
// PASTA_CONSUMER_PIPELINE picks the composition:
//   0 none (the plain program)            1 nv::Cupti, KernelFreq + Timeline
//   2 nv::Sanitizer + proc::GpuBucketing  3 nv::Sanitizer + proc::Cpu
//   4 device::Annotations + proc::GpuBucketing
// (2-4 with MemHotness, 2-3 also UvmHotness). What it does is known exactly
// and printed, for tests/gpu/check.py to compare with the reports:
//   fill x 3      x, y and m (n floats each; m managed unless --managed 0)
//   axpy x 2K     y = a x + y on stream 1: 2n reads (x, y), n writes (y)
//   scale x K     m = s m on stream 2: n reads, n writes
// all 3K launches of axpy and scale inside PASTA_SCOPE("steps"); the streams
// are non-blocking unless --streams default.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if PASTA_CONSUMER_PIPELINE == 4
#define PASTA_DEVICE_ANNOTATIONS 1
#endif
#include <pasta/device/access.cuh>
#if PASTA_CONSUMER_PIPELINE == 1
#include <pasta/nv/cupti.hpp>
#include <pasta/tools/timeline.hpp>
#elif PASTA_CONSUMER_PIPELINE == 2 || PASTA_CONSUMER_PIPELINE == 3
#include <pasta/nv/sanitizer.hpp>
#endif
#if PASTA_CONSUMER_PIPELINE != 0
#include <pasta/pasta.hpp>
#endif

#define CHECK(call)                                                                       \
  do {                                                                                    \
    const cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                   cudaGetErrorString(e_));                                               \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

using pasta::device::Recorder;

__global__ void fill(float* p, float v, int n, Recorder rec) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    p[i] = v + 0.001f * (i % 1000);
    rec.access(&p[i], sizeof(float), true);
  }
}

__global__ void axpy(float a, const float* x, float* y, int n, Recorder rec) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
    rec.access(&x[i], sizeof(float), false);
    rec.access(&y[i], sizeof(float), false);
    rec.access(&y[i], sizeof(float), true);
  }
}

__global__ void scale(float s, float* m, int n, Recorder rec) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    m[i] = s * m[i];
    rec.access(&m[i], sizeof(float), false);
    rec.access(&m[i], sizeof(float), true);
  }
}

#if PASTA_CONSUMER_PIPELINE == 1
using Profiler = pasta::Profiler<pasta::nv::Cupti, pasta::proc::Cpu, pasta::tools::KernelFreq,
                                 pasta::tools::Timeline>;
#elif PASTA_CONSUMER_PIPELINE == 2
using Profiler = pasta::Profiler<pasta::nv::Sanitizer, pasta::proc::GpuBucketing,
                                 pasta::tools::MemHotness, pasta::tools::UvmHotness>;
#elif PASTA_CONSUMER_PIPELINE == 3
using Profiler = pasta::Profiler<pasta::nv::Sanitizer, pasta::proc::Cpu, pasta::tools::MemHotness,
                                 pasta::tools::UvmHotness>;
#elif PASTA_CONSUMER_PIPELINE == 4
using Profiler = pasta::Profiler<pasta::device::Annotations, pasta::proc::GpuBucketing,
                                 pasta::tools::MemHotness>;
#endif

int main(int argc, char** argv) {
#if PASTA_CONSUMER_PIPELINE != 0
  Profiler prof;  // before the first CUDA call
#endif
  int k = 100;
  bool managed = true, nonblocking = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--launches")) {
      k = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--managed")) {
      managed = std::atoi(argv[i + 1]) != 0;
    } else if (!std::strcmp(argv[i], "--streams")) {
      nonblocking = std::strcmp(argv[i + 1], "default") != 0;
    } else {
      std::fprintf(stderr, "usage: %s [--launches K] [--managed 0|1] [--streams default]\n",
                   argv[0]);
      return 2;
    }
  }
  const int n = 1 << 18;  // 1 MiB of floats per buffer
  const std::size_t bytes = n * sizeof(float);
  float *x, *y, *m;
  CHECK(cudaMalloc(&x, bytes));
  CHECK(cudaMalloc(&y, bytes));
  if (managed)
    CHECK(cudaMallocManaged(&m, bytes));
  else
    CHECK(cudaMalloc(&m, bytes));
  cudaStream_t s1 = nullptr, s2 = nullptr;
  if (nonblocking) {
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  }
  const dim3 grid((n + 255) / 256), block(256);
#if PASTA_CONSUMER_PIPELINE == 4
#define LAUNCH(kernel, stream, ...) \
  pasta::device::launch(prof.handler(), #kernel, kernel, grid, block, 0, stream, __VA_ARGS__)
#else
#define LAUNCH(kernel, stream, ...) kernel<<<grid, block, 0, stream>>>(__VA_ARGS__, Recorder{})
#endif
  LAUNCH(fill, s1, x, 1.0f, n);
  LAUNCH(fill, s1, y, 2.0f, n);
  LAUNCH(fill, s2, m, 3.0f, n);
  CHECK(cudaGetLastError());
  {
#if PASTA_CONSUMER_PIPELINE != 0
    PASTA_SCOPE("steps");
#endif
    for (int i = 0; i < k; ++i) {
      LAUNCH(axpy, s1, 0.5f, x, y, n);
      LAUNCH(axpy, s1, -0.25f, x, y, n);
      LAUNCH(scale, s2, i % 2 ? 0.5f : 2.0f, m, n);
    }
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
  }
  std::vector<float> hy(n), hm(n);
  CHECK(cudaMemcpy(hy.data(), y, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hm.data(), m, bytes, cudaMemcpyDeviceToHost));
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += hy[i] + hm[i];
  // The ground truth the GPU test compares the reports with.
  std::printf("buffer x %p %zu\nbuffer y %p %zu\nbuffer m %p %zu %s\n", static_cast<void*>(x),
              bytes, static_cast<void*>(y), bytes, static_cast<void*>(m), bytes,
              managed ? "managed" : "device");
  std::printf("launches fill 3 axpy %d scale %d\n", 2 * k, k);
  std::printf("accesses x reads %llu writes %llu\n", 2ull * k * n, 1ull * n);
  std::printf("accesses y reads %llu writes %llu\n", 2ull * k * n, (2ull * k + 1) * n);
  std::printf("accesses m reads %llu writes %llu\n", 1ull * k * n, (1ull * k + 1) * n);
  std::printf("checksum %.6f\n", sum);
  if (s1) CHECK(cudaStreamDestroy(s1));
  if (s2) CHECK(cudaStreamDestroy(s2));
  for (float* p : {x, y, m}) CHECK(cudaFree(p));
  return 0;
}
