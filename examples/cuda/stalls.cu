// One kernel reading two inputs in the same loop, for the stall-blame GPU
// test:
//   cold  1 GiB, read at pseudo-random places: nearly every load misses L1
//         and L2 and waits for DRAM
//   warm  64 KiB, read by every thread at neighbouring places: its loads hit
// Each loop step adds a cold value into one sum and a warm value into
// another, so the instruction waiting for a cold load waits for nothing
// else. A stall-blame profile must charge the memory stalls to `cold`
// (the 1 GiB allocation), not to `warm` (64 KiB). Prints "checksum" (must
// not change under profiling) and the three allocation sizes.
//   stalls [--threads N] [--launches L]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "check.cuh"

__global__ void fill(float* p, size_t n, float scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = scale * static_cast<float>(i % 1000);
}

__global__ void blend(const float* cold, unsigned cold_mask, const float* warm, unsigned warm_mask,
                      float* out, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned j = i * 2654435761u;
  float a = 0.f, b = 0.f;
#pragma unroll 4
  for (unsigned r = 0; r < 32; ++r) {
    j = j * 1664525u + 1013904223u;
    a += cold[j & cold_mask];
    b = fmaf(b, 0.5f, warm[(i + r) & warm_mask]);
  }
  out[i] = a + b;
}

int main(int argc, char** argv) {
  unsigned threads = 128 * 1024, launches = 50;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    else if (std::strcmp(argv[i], "--launches") == 0 && i + 1 < argc)
      launches = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    else {
      std::fprintf(stderr, "usage: %s [--threads N] [--launches L]\n", argv[0]);
      return 2;
    }
  }
  const size_t cold_n = size_t{1} << 28, warm_n = size_t{1} << 14;  // 1 GiB, 64 KiB
  float *cold, *warm, *out;
  CHECK(cudaMalloc(&cold, cold_n * sizeof(float)));
  CHECK(cudaMalloc(&warm, warm_n * sizeof(float)));
  CHECK(cudaMalloc(&out, threads * sizeof(float)));
  fill<<<1024, 256>>>(cold, cold_n, 1e-3f);
  fill<<<64, 256>>>(warm, warm_n, 1e-4f);
  for (unsigned l = 0; l < launches; ++l)
    blend<<<(threads + 127) / 128, 128>>>(cold, static_cast<unsigned>(cold_n - 1), warm,
                                          static_cast<unsigned>(warm_n - 1), out, threads);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> h(threads);
  CHECK(cudaMemcpy(h.data(), out, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (float v : h) sum += v;
  std::printf("checksum %.6f\n", sum);
  std::printf("bytes cold %zu warm %zu out %zu\n", cold_n * sizeof(float), warm_n * sizeof(float),
              threads * sizeof(float));
  for (float* p : {cold, warm, out}) CHECK(cudaFree(p));
  return 0;
}
