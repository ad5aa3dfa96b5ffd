// The kernels of tensor_access.cpp, kept apart so nvcc never sees PyTorch's
// headers. Every access is one 4-byte load or store by one thread.
#include <cuda_runtime.h>

__global__ void fill_index(float* a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = static_cast<float>(i % 7);  // one store per element
}

__global__ void gather_add(const float* x, const float* hot, float* y, int n, int m) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + hot[i % m];  // x and hot: one load each; y: one store
}

void launch_fill_index(float* a, int n) { fill_index<<<(n + 255) / 256, 256>>>(a, n); }
void launch_gather_add(const float* x, const float* hot, float* y, int n, int m) {
  gather_add<<<(n + 255) / 256, 256>>>(x, hot, y, n, m);
}
