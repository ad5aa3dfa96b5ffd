// Launches per kernel and a timeline of this program, through CUPTI.
#include <cuda_runtime.h>

#include <pasta/nv/cupti.hpp>
#include <pasta/pasta.hpp>
#include <pasta/tools/timeline.hpp>

__global__ void scale(float* x, float s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

using Profiler = pasta::Profiler<pasta::nv::Cupti, pasta::proc::Cpu, pasta::tools::KernelFreq,
                                 pasta::tools::Timeline>;

int main() {
  Profiler prof;  // before the first CUDA call
  PASTA_SCOPE("main");
  const int n = 1 << 20;
  float* x = nullptr;
  cudaMalloc(&x, n * sizeof(float));
  for (int step = 0; step < 10; ++step) scale<<<(n + 255) / 256, 256>>>(x, 0.5f, n);
  cudaDeviceSynchronize();
  cudaFree(x);
}  // the reports are written when prof is destroyed
