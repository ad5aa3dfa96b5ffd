// Which pages of which allocations the kernels touch, counted on the GPU.
#include <cuda_runtime.h>

#include <pasta/nv/sanitizer.hpp>
#include <pasta/pasta.hpp>

__global__ void scale(float* x, float s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

using Profiler = pasta::Profiler<pasta::nv::Sanitizer, pasta::proc::GpuBucketing,
                                 pasta::tools::MemHotness, pasta::tools::UvmHotness>;

int main() {
  Profiler prof;  // before the first CUDA call
  const int n = 1 << 20;
  float* x = nullptr;
  cudaMallocManaged(&x, n * sizeof(float));  // UvmHotness advises on managed memory
  for (int step = 0; step < 10; ++step) scale<<<(n + 255) / 256, 256>>>(x, 0.5f, n);
  cudaDeviceSynchronize();
  cudaFree(x);
}  // the reports are written when prof is destroyed
