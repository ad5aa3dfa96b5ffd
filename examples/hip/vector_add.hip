// HIP vector add, c = a + b over 2^24 floats, its accesses annotated for
// pasta::device. Built plain, and with -DPASTA_DEVICE_ANNOTATIONS
// (device::Annotations + proc::GpuBucketing + MemHotness, profiler.cpp;
// the post-pass uses rocPRIM). Prints a checksum that profiling must not change.
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

__global__ void vecadd(const float* a, const float* b, float* c, int n,
                       pasta::device::Recorder rec) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    c[i] = a[i] + b[i];
    rec.access(&a[i], sizeof(float), false);
    rec.access(&b[i], sizeof(float), false);
    rec.access(&c[i], sizeof(float), true);
  }
}

int main() {
  const int n = 1 << 24;
  std::vector<float> ha(n), hb(n), hc(n);
  for (int i = 0; i < n; ++i) {
    ha[i] = 0.25f * (i % 101);
    hb[i] = 0.5f * (i % 37);
  }
  float *a, *b, *c;
  CHECK(hipMalloc(&a, n * sizeof(float)));
  CHECK(hipMalloc(&b, n * sizeof(float)));
  CHECK(hipMalloc(&c, n * sizeof(float)));
  CHECK(hipMemcpy(a, ha.data(), n * sizeof(float), hipMemcpyHostToDevice));
  CHECK(hipMemcpy(b, hb.data(), n * sizeof(float), hipMemcpyHostToDevice));
  const dim3 grid((n + 255) / 256), block(256);
#if defined(PASTA_DEVICE_ANNOTATIONS)
  pasta::device::launch(annotations(), "vecadd", vecadd, grid, block, 0, nullptr, a, b, c, n);
#else
  vecadd<<<grid, block>>>(a, b, c, n, pasta::device::Recorder{});
#endif
  CHECK(hipGetLastError());
  CHECK(hipMemcpy(hc.data(), c, n * sizeof(float), hipMemcpyDeviceToHost));
  double sum = 0;
  for (float v : hc) sum += v;
  std::printf("checksum %.6f\n", sum);
  for (float* p : {a, b, c}) CHECK(hipFree(p));
  return 0;
}
