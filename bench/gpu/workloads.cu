// Workloads of the memory-access benchmark (bench/gpu/memory.py), run
// unmodified under each instrumentation variant:
//   vecadd   c = a + b on 2^24 floats (50M global accesses per launch)
//   stencil  a 5-point 2D stencil on a 2048 x 2048 grid (25M per launch)
//   sgemm    cuBLAS SGEMM, 4096 x 4096 x 4096
// Each iteration is launch + synchronise, timed on the host, so the time
// includes whatever a profiler does around the kernel. Prints one JSON line:
// workload, iterations, median and mean ms per iteration, checksum.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../../examples/cuda/check.cuh"

__global__ void vecadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void stencil(const float* in, float* out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1) return;
  const int i = y * w + x;
  out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
}

__global__ void fill(float* x, std::size_t n, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    x[i] = scale * static_cast<float>(i % 1013);
}

static double checksum(const float* d, std::size_t n) {
  std::vector<float> h(n);
  CHECK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  double s = 0;
  for (float v : h) s += v;
  return s;
}

int main(int argc, char** argv) {
  std::string workload = argc > 1 ? argv[1] : "vecadd";
  int iters = 10, warmup = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--warmup")) warmup = std::atoi(argv[i + 1]);
  }
  std::vector<float*> buffers;
  auto alloc = [&](std::size_t n, float scale) {
    float* p;
    CHECK(cudaMalloc(&p, n * sizeof(float)));
    fill<<<1024, 256>>>(p, n, scale);
    buffers.push_back(p);
    return p;
  };
  cublasHandle_t blas = nullptr;
  std::size_t n = 0;
  float* result = nullptr;
  std::function<void()> step;
  if (workload == "vecadd") {
    n = 1 << 24;
    float *a = alloc(n, 1e-3f), *b = alloc(n, 2e-3f), *c = alloc(n, 0);
    result = c;
    step = [=] { vecadd<<<(n + 255) / 256, 256>>>(a, b, c, static_cast<int>(n)); };
  } else if (workload == "stencil") {
    const int w = 2048, h = 2048;
    n = std::size_t(w) * h;
    float *in = alloc(n, 1e-3f), *out = alloc(n, 0);
    result = out;
    step = [=] { stencil<<<dim3(w / 32, h / 8), dim3(32, 8)>>>(in, out, w, h); };
  } else if (workload == "sgemm") {
    const int m = 4096;
    n = std::size_t(m) * m;
    float *a = alloc(n, 1e-4f), *b = alloc(n, 2e-4f), *c = alloc(n, 0);
    result = c;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "cublasCreate failed\n");
      return 1;
    }
    step = [=] {
      const float one = 1, zero = 0;
      cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, a, m, b, m, &zero, c, m);
    };
  } else {
    std::fprintf(stderr, "usage: workloads vecadd|stencil|sgemm [--iters N] [--warmup N]\n");
    return 2;
  }
  CHECK(cudaDeviceSynchronize());
  std::vector<double> ms;
  for (int i = 0; i < warmup + iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double v : ms) mean += v / ms.size();
  std::printf("{\"workload\": \"%s\", \"iterations\": %d, \"median_ms\": %.4f, \"mean_ms\": %.4f, "
              "\"checksum\": %.6e}\n",
              workload.c_str(), iters, sorted[sorted.size() / 2], mean, checksum(result, n));
  if (blas) cublasDestroy(blas);
  for (float* p : buffers) CHECK(cudaFree(p));
  return 0;
}
