// Launch cost: N empty kernels on one stream, timed on the host from the
// first launch to the final synchronisation, after a warm-up. Run it
// natively and under `pasta run` to get pasta's cost per launch.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void empty() {}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 100000;
  for (int i = 0; i < 1000; ++i) empty<<<1, 32>>>();  // warm-up: module load, first launches
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) empty<<<1, 32>>>();
  const cudaError_t err = cudaDeviceSynchronize();
  const auto t1 = std::chrono::steady_clock::now();
  if (err != cudaSuccess || cudaGetLastError() != cudaSuccess) {
    std::fprintf(stderr, "launch failed: %s\n", cudaGetErrorString(err));
    return 1;
  }
  const double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
  std::printf("{\"launches\": %d, \"total_us\": %.1f, \"us_per_launch\": %.4f}\n", n, us, us / n);
  return 0;
}
