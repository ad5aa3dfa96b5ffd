// A small multi-kernel HIP program: two streams, async copies, a memset,
// three kernels (fill, saxpy, block reduction through shared memory) and
// synchronisation, the API surface amd::Rocprofiler traces. With
// -DPASTA_DEVICE_ANNOTATIONS its global accesses are also counted through
// pasta::device. Prints a checksum that profiling must not change.
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include <pasta/device/access.cuh>
#if defined(PASTA_DEVICE_ANNOTATIONS)
// The profiler lives in profiler.cpp, built by the host compiler: clang 15
// (Debian's hipcc) crashes on nlohmann/json, which reports use, in C++20.
pasta::device::Annotations& annotations();
#endif

#define CHECK(call)                                                                   \
  do {                                                                                \
    hipError_t err_ = (call);                                                         \
    if (err_ != hipSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                   hipGetErrorString(err_));                                          \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

using pasta::device::Recorder;

__global__ void fill(float* x, int n, float v, Recorder rec) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    x[i] = v + static_cast<float>(i % 13);
    rec.access(&x[i], sizeof(float), true);
  }
}

__global__ void saxpy(float a, const float* x, float* y, int n, Recorder rec) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
    rec.access(&x[i], sizeof(float), false);
    rec.access(&y[i], sizeof(float), false);
    rec.access(&y[i], sizeof(float), true);
  }
}

// One partial sum per block of 256 threads.
__global__ void block_sum(const float* y, float* partial, int n, Recorder rec) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? y[i] : 0.0f;
  if (i < n) rec.access(&y[i], sizeof(float), false);
  __syncthreads();
  for (unsigned step = blockDim.x / 2; step > 0; step >>= 1) {
    if (threadIdx.x < step) s[threadIdx.x] += s[threadIdx.x + step];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = s[0];
    rec.access(&partial[blockIdx.x], sizeof(float), true);
  }
}

int main() {
#if defined(PASTA_DEVICE_ANNOTATIONS)
#define LAUNCH(name, kernel, grid, block, stream, ...) \
  pasta::device::launch(annotations(), name, kernel, grid, block, 0, stream, __VA_ARGS__)
#else
#define LAUNCH(name, kernel, grid, block, stream, ...) \
  kernel<<<grid, block, 0, stream>>>(__VA_ARGS__, Recorder{})
#endif
  const int n = 1 << 20, blocks = n / 256;
  hipStream_t s1, s2;
  CHECK(hipStreamCreate(&s1));
  CHECK(hipStreamCreate(&s2));
  float *x, *y, *partial;
  CHECK(hipMalloc(&x, n * sizeof(float)));
  CHECK(hipMalloc(&y, n * sizeof(float)));
  CHECK(hipMalloc(&partial, blocks * sizeof(float)));
  CHECK(hipMemsetAsync(y, 0, n * sizeof(float), s2));
  std::vector<float> host(n, 1.0f);
  CHECK(hipMemcpyAsync(y, host.data(), n * sizeof(float), hipMemcpyHostToDevice, s2));
  LAUNCH("fill", fill, dim3(blocks), dim3(256), s1, x, n, 2.0f);
  CHECK(hipStreamSynchronize(s2));
  LAUNCH("saxpy", saxpy, dim3(blocks), dim3(256), s1, 3.0f, x, y, n);
  LAUNCH("block_sum", block_sum, dim3(blocks), dim3(256), s1, y, partial, n);
  CHECK(hipGetLastError());
  CHECK(hipDeviceSynchronize());
  std::vector<float> sums(blocks);
  CHECK(hipMemcpy(sums.data(), partial, blocks * sizeof(float), hipMemcpyDeviceToHost));
  double total = 0;
  for (float v : sums) total += v;
  std::printf("checksum %.6f\n", total);
  for (float* p : {x, y, partial}) CHECK(hipFree(p));
  CHECK(hipStreamDestroy(s1));
  CHECK(hipStreamDestroy(s2));
  return 0;
}
