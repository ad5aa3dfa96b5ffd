// examples/cuda/access_pattern.cu with its global accesses annotated by
// hand (pasta::device::Recorder) instead of instrumented by the Compute
// Sanitizer: the same kernels, the same known counts (an atomic is
// annotated as a read and a write, as the sanitizer counts it). Built plain
// (recorders compile to nothing) and with -DPASTA_DEVICE_ANNOTATIONS
// (device::Annotations + proc::GpuBucketing + MemHotness in main).
//
//   annotated                 the access pattern; prints buffers and a checksum
//   annotated --vecadd N K    c = a + b over N floats, K times; prints the mean
//                             time per launch (bench/gpu/annotations.py)
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <pasta/device/access.cuh>
#if defined(PASTA_DEVICE_ANNOTATIONS)
#include <pasta/pasta.hpp>
#endif

#include "check.cuh"

using pasta::device::Recorder;

__global__ void init(float* a, int n, Recorder rec) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    a[i] = 0.5f * (i % 97);
    rec.access(&a[i], sizeof(float), true);
  }
}

__global__ void copy_half(const float* a, float* b, int n, Recorder rec) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 2) {
    b[i] = a[i];
    rec.access(&a[i], sizeof(float), false);
    rec.access(&b[i], sizeof(float), true);
  }
}

__global__ void hot_page(const float* a, float* out, int reps, Recorder rec) {
  float sum = 0;
  for (int r = 0; r < reps; ++r) {
    sum += static_cast<volatile const float*>(a)[threadIdx.x];
    rec.access(&a[threadIdx.x], sizeof(float), false);
  }
  out[threadIdx.x] = sum;
  rec.access(&out[threadIdx.x], sizeof(float), true);
}

__global__ void count(unsigned* c, unsigned* last, int n, Recorder rec) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unsigned old = atomicAdd(&c[i % 16], 1u);
    rec.access(&c[i % 16], sizeof(unsigned), false);
    rec.access(&c[i % 16], sizeof(unsigned), true);
    if (old == 0xffffffffu) *last = old;  // never true: keeps the atomic's result used
  }
}

// Shared and local accesses are not annotated: the recorder counts global memory.
__global__ void stage(float* out, Recorder rec) {
  __shared__ float s[256];
  volatile float a[64];  // the same local array as access_pattern's, so the same output
  const int t = threadIdx.x;
  s[t] = static_cast<float>(t);
  for (int i = 0; i < 64; ++i) a[i] = static_cast<float>(i * t);
  __syncthreads();
  float sum = s[255 - t];
  for (int i = 0; i < 64; ++i) sum += a[(t * 7 + i) % 64];
  out[t] = sum;
  rec.access(&out[t], sizeof(float), true);
}

__global__ void vecadd(const float* a, const float* b, float* c, int n, Recorder rec) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    c[i] = a[i] + b[i];
    rec.access(&a[i], sizeof(float), false);
    rec.access(&b[i], sizeof(float), false);
    rec.access(&c[i], sizeof(float), true);
  }
}

#if defined(PASTA_DEVICE_ANNOTATIONS)
using Profiler = pasta::Profiler<pasta::device::Annotations, pasta::proc::GpuBucketing,
                                 pasta::tools::MemHotness>;
#define PASTA_LAUNCH(name, grid, block, kernel, ...)         \
  do {                                                       \
    Recorder rec_ = prof.handler().begin(name, grid, block); \
    kernel<<<grid, block>>>(__VA_ARGS__, rec_);              \
    prof.handler().end(rec_);                                \
  } while (0)
#else
#define PASTA_LAUNCH(name, grid, block, kernel, ...) \
  kernel<<<grid, block>>>(__VA_ARGS__, Recorder{})
#endif

// c = a + b, k times: the mean time of one launch, begin/end included.
static int run_vecadd([[maybe_unused]] auto& prof, int n, int k) {
  float *a, *b, *c;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  CHECK(cudaMalloc(&c, n * sizeof(float)));
  CHECK(cudaMemset(a, 0, n * sizeof(float)));
  CHECK(cudaMemset(b, 0, n * sizeof(float)));
  const dim3 grid((n + 255) / 256), block(256);
  PASTA_LAUNCH("vecadd", grid, block, vecadd, a, b, c, n);  // warm-up
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  CHECK(cudaEventRecord(t0));
  for (int i = 0; i < k; ++i) PASTA_LAUNCH("vecadd", grid, block, vecadd, a, b, c, n);
  CHECK(cudaEventRecord(t1));
  CHECK(cudaEventSynchronize(t1));
  CHECK(cudaGetLastError());
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, t0, t1));
  std::printf("vecadd %d floats: %.4f ms per launch (%d launches)\n", n, ms / k, k);
  for (float* p : {a, b, c}) CHECK(cudaFree(p));
  return 0;
}

int main(int argc, char** argv) {
#if defined(PASTA_DEVICE_ANNOTATIONS)
  Profiler prof;
#else
  int prof = 0;
#endif
  if (argc == 4 && std::strcmp(argv[1], "--vecadd") == 0)
    return run_vecadd(prof, std::atoi(argv[2]), std::atoi(argv[3]));
  if (argc != 1) {
    std::fprintf(stderr, "usage: %s [--vecadd FLOATS LAUNCHES]\n", argv[0]);
    return 2;
  }
  const int n = 1 << 20, reps = 100;
  float *a, *b, *out;
  unsigned *c, *last;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  CHECK(cudaMalloc(&out, 256 * sizeof(float)));
  CHECK(cudaMalloc(&c, 16 * sizeof(unsigned)));
  CHECK(cudaMalloc(&last, sizeof(unsigned)));
  CHECK(cudaMemset(b, 0, n * sizeof(float)));
  CHECK(cudaMemset(c, 0, 16 * sizeof(unsigned)));
  std::printf("buffer a %p %zu\nbuffer b %p %zu\nbuffer out %p %zu\nbuffer c %p %zu\n",
              static_cast<void*>(a), n * sizeof(float), static_cast<void*>(b), n * sizeof(float),
              static_cast<void*>(out), 256 * sizeof(float), static_cast<void*>(c),
              16 * sizeof(unsigned));

  PASTA_LAUNCH("init", dim3(n / 256), dim3(256), init, a, n);
  PASTA_LAUNCH("copy_half", dim3(n / 256), dim3(256), copy_half, a, b, n);
  PASTA_LAUNCH("hot_page", dim3(1), dim3(256), hot_page, a, out, reps);
  PASTA_LAUNCH("count", dim3(n / 256), dim3(256), count, c, last, n);
  PASTA_LAUNCH("stage", dim3(1), dim3(256), stage, out);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  std::vector<float> hb(n), ho(256);
  std::vector<unsigned> hc(16);
  CHECK(cudaMemcpy(hb.data(), b, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(ho.data(), out, 256 * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hc.data(), c, 16 * sizeof(unsigned), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (float v : hb) sum += v;
  for (float v : ho) sum += v;
  for (unsigned v : hc) sum += v;
  std::printf("checksum %.6f\n", sum);
  for (void* p : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(out),
                  static_cast<void*>(c), static_cast<void*>(last)})
    CHECK(cudaFree(p));
  return 0;
}
