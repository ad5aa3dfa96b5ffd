// Two kernels whose hardware counters are known in advance, for the
// counters GPU tests:
//   stream  b[i] = 2 a[i] over N floats: reads 4N bytes from DRAM, writes 4N
//           (N = 2^30 by default: 4 GiB an array, 80 times the H100's L2)
//   fma     T threads, each one add and K dependent FMAs in registers:
//           exactly (2 K + 1) T flop
// Prints "checksum" (must not change under profiling) and the expected
// numbers. Built plain, and with -DPASTA_PROFILE: nv::Cupti measures the
// kernels with the Range Profiler (kernel replay) for tools::OpCounters.
// With --sweep it first runs `stream` three times more (one signature:
// measured once in full and once for each one-pass set of the
// cache-sensitive metrics, the rest given their numbers) and `fma` on grids of 1 to 100 blocks (100
// signatures: more ranges than one counter-data image holds). --repeat R runs the final stream and
// fma R times (a later launch of a signature is measured again for the cache-sensitive metrics
// alone: the third, when the second finds the profiler set up for the full set).
//   counters [--floats N] [--sweep] [--repeat R]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifdef PASTA_PROFILE
#include "../profiler.hpp"
#endif

#include "check.cuh"

__global__ void stream(const float* a, float* b, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    b[i] = 2.0f * a[i];
}

__global__ void fma(float* out, float x0, float a, float b, int k) {
  float x = x0 + threadIdx.x;
#pragma unroll 16
  for (int i = 0; i < k; ++i) x = fmaf(x, a, b);
  out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

int main(int argc, char** argv) {
  size_t n = size_t{1} << 30;
  bool sweep = false;
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--floats") == 0 && i + 1 < argc)
      n = std::strtoull(argv[++i], nullptr, 10);
    else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
      repeat = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--sweep") == 0)
      sweep = true;
    else {
      std::fprintf(stderr, "usage: %s [--floats N] [--sweep] [--repeat R]\n", argv[0]);
      return 2;
    }
  }
  if (repeat < 1) {
    std::fprintf(stderr, "--repeat: a whole number >= 1\n");
    return 2;
  }
#ifdef PASTA_PROFILE
  const auto prof = make_profiler();  // counters_profiler.cpp
#endif
  const int k = 1024, blocks = 4096, threads = 256;
  float *a, *b, *out;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  CHECK(cudaMalloc(&out, size_t{blocks} * threads * sizeof(float)));
  CHECK(cudaMemset(a, 0, n * sizeof(float)));  // 2 * 0 = 0: the checksum sees b's write
  CHECK(cudaMemset(b, 0xff, n * sizeof(float)));
  if (sweep) {
    for (int i = 0; i < 3; ++i) stream<<<132 * 16, 256>>>(a, b, n);
    for (int g = 1; g <= 100; ++g) fma<<<g, threads>>>(out, 1.0f, 0.999f, 0.001f, k);
  }
  for (int r = 0; r < repeat; ++r) {
    stream<<<132 * 16, 256>>>(a, b, n);
    fma<<<blocks, threads>>>(out, 1.0f, 0.999f, 0.001f, k);
  }
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  std::vector<float> hb(1 << 20), ho(size_t{blocks} * threads);
  CHECK(cudaMemcpy(hb.data(), b + (n - hb.size()), hb.size() * sizeof(float),
                   cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(ho.data(), out, ho.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (float v : hb) sum += v;
  for (float v : ho) sum += v;
  std::printf("checksum %.6f\n", sum);
  std::printf("expect stream dram bytes read %zu written %zu\n", n * sizeof(float),
              n * sizeof(float));
  std::printf("expect fma flops %llu, %llu a block\n", (2ull * k + 1) * blocks * threads,
              (2ull * k + 1) * threads);
  for (float* p : {a, b, out}) CHECK(cudaFree(p));
  return 0;
}
