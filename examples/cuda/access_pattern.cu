// A CUDA program whose memory accesses are known exactly, the ground truth
// of the memory-access GPU tests. With n = 2^20 floats (4 MiB per buffer):
//   init        writes a[0..n)                  n writes to a
//   copy_half   b[i] = a[i] for i < n/2         n/2 reads of a, n/2 writes to b
//   hot_page    256 threads read a[t] reps times, then write out[t]
//                                               256 reps reads of a (its first
//                                               256 floats), 256 writes to out
//   count       n threads atomicAdd c[i % 16]   n atomics on c
//   stage       256 threads: write shared s[t], 64 writes to a local array,
//               read s[255 - t] and 64 local reads, write out[t]
//                                               256 writes to out; with shared
//                                               and local instrumented, 2 x 1 KiB
//                                               shared and 2 x 64 KiB local (the
//                                               compiler may vectorise the local
//                                               accesses: count bytes)
// Every access is 4 bytes. It prints each buffer's address and a checksum
// that must not change under profiling. Built plain, and with -DPASTA_PROFILE
// (nv::Sanitizer + proc::GpuBucketing + MemHotness in main) or
// -DPASTA_PROFILE_CPU (the same with proc::Cpu: raw records, host reduction).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#if defined(PASTA_PROFILE) || defined(PASTA_PROFILE_CPU)
#include "../profiler.hpp"
#endif

#include "check.cuh"

__global__ void init(float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = 0.5f * (i % 97);
}

__global__ void copy_half(const float* a, float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 2) b[i] = a[i];
}

__global__ void hot_page(const float* a, float* out, int reps) {
  float sum = 0;
  for (int r = 0; r < reps; ++r) sum += static_cast<volatile const float*>(a)[threadIdx.x];
  out[threadIdx.x] = sum;
}

__global__ void count(unsigned* c, unsigned* last, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unsigned old = atomicAdd(&c[i % 16], 1u);
    if (old == 0xffffffffu) *last = old;  // never true: keeps the atomic's result used
  }
}

__global__ void stage(float* out) {
  __shared__ float s[256];
  volatile float a[64];  // volatile: a local-memory array, every access kept
  const int t = threadIdx.x;
  s[t] = static_cast<float>(t);
  for (int i = 0; i < 64; ++i) a[i] = static_cast<float>(i * t);
  __syncthreads();
  float sum = s[255 - t];
  for (int i = 0; i < 64; ++i) sum += a[(t * 7 + i) % 64];
  out[t] = sum;
}

int main() {
#if defined(PASTA_PROFILE) || defined(PASTA_PROFILE_CPU)
  const auto prof = make_profiler();  // access_pattern_profiler.cpp
#endif
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

  init<<<n / 256, 256>>>(a, n);
  copy_half<<<n / 256, 256>>>(a, b, n);
  hot_page<<<1, 256>>>(a, out, reps);
  count<<<n / 256, 256>>>(c, last, n);
  stage<<<1, 256>>>(out);
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
