// A kernel that writes a `__device__` variable: a profiler that replays
// kernels must leave it as the program's own launches left it. The kernel
// adds one to a `__device__` counter and to a counter in cudaMalloc'd
// memory; the program launches it 6 times (two grid sizes, so two counter
// signatures) and prints both counters, 6 and 6 unprofiled. Before pasta
// saved such variables with the allocations, `pasta run --counters` left
// the `__device__` counter at 24 on an H200 (2026-11-30, driver 580.159.04;
// 60 with PASTA_COUNTER_LAUNCHES=0, in batches or with PASTA_COUNTER_BATCH=1),
// and PASTA_COUNTER_REPLAY=cupti, ncu's kernel replay and its application
// replay at 6; the allocated counter was 6 under all of them
// (gpu: counters_device_variables holds both to 6 now). Alone:
//   nvcc -std=c++17 -arch=sm_90 -o /tmp/dv examples/cuda/device_variables.cu
//   /tmp/dv; pasta run --counters -- /tmp/dv; ncu --metrics smsp__inst_executed.sum /tmp/dv
#include <cuda_runtime.h>

#include <cstdio>

__device__ unsigned counter = 0;

__global__ void count(unsigned* allocated_counter) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    atomicAdd(&counter, 1u);
    atomicAdd(allocated_counter, 1u);
  }
}

int main() {
  constexpr unsigned launches = 6;
  unsigned* allocated = nullptr;
  if (cudaMalloc(&allocated, sizeof(unsigned)) != cudaSuccess) return 1;
  cudaMemset(allocated, 0, sizeof(unsigned));
  for (unsigned i = 0; i < launches; ++i) count<<<i % 2 ? 2 : 1, 32>>>(allocated);
  unsigned in_module = 0, in_allocation = 0;
  cudaMemcpyFromSymbol(&in_module, counter, sizeof(unsigned));
  cudaMemcpy(&in_allocation, allocated, sizeof(unsigned), cudaMemcpyDeviceToHost);
  const cudaError_t err = cudaDeviceSynchronize();
  std::printf("{\"launches\": %u, \"device_variable\": %u, \"allocation\": %u, \"error\": \"%s\"}\n",
              launches, in_module, in_allocation, cudaGetErrorName(err));
  return in_module == launches && in_allocation == launches ? 0 : 2;
}
