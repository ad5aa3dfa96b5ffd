// A plain CUDA program with a known number of launches per kernel:
//   fill    1 launch
//   saxpy   100 launches (+ threads x per_thread with --threads)
//   scale   50 launches
//   reduce  10 launches
// With --threads T, T host threads each launch `saxpy` per_thread times on
// a stream of their own, all at once. With --devices D, the main sequence
// runs on each of D devices. With --graph G, a CUDA graph of 5 `scale`
// kernels is captured once and launched G times (5 G more `scale` kernels).
// With --contexts C, C host threads each create a CUDA context of their own
// on device 0 (driver API) and run the main sequence in it, all at once.
// Prints checksums that must not change under profiling. Built twice: plain, and with -DPASTA_PROFILE, which puts a
// pasta profiler in main.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifdef PASTA_PROFILE
#include <pasta/core/scope.hpp>

#include "../profiler.hpp"
#endif

#include "check.cuh"

__global__ void fill(float* x, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v + 0.001f * (i % 1000);
}

__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void scale(float* y, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= s;
}

__global__ void reduce(const float* y, double* out, int n) {
  __shared__ double part[256];
  double sum = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    sum += y[i];
  part[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, part[0]);
}

namespace {

constexpr int n = 1 << 20;
constexpr int block = 256;
constexpr int grid = (n + block - 1) / block;

// The fixed sequence in the current context; returns its checksum.
double sequence() {
  float *x, *y;
  double* sum;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(double)));
  fill<<<grid, block>>>(x, 1.0f, n);
  CHECK(cudaMemset(y, 0, n * sizeof(float)));
  for (int i = 0; i < 100; ++i) saxpy<<<grid, block>>>(0.5f, x, y, n);
  for (int i = 0; i < 50; ++i) scale<<<grid, block>>>(y, 0.999f, n);
  CHECK(cudaMemset(sum, 0, sizeof(double)));
  for (int i = 0; i < 10; ++i) reduce<<<64, 256>>>(y, sum, n);
  CHECK(cudaGetLastError());
  double host = 0;
  CHECK(cudaMemcpy(&host, sum, sizeof(double), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(sum));
  return host;
}

// The fixed sequence on one device (its primary context).
double run_sequence(int device) {
  CHECK(cudaSetDevice(device));
  return sequence();
}

#define CHECK_CU(call)                                                              \
  do {                                                                              \
    if (CUresult r_ = (call); r_ != CUDA_SUCCESS) {                                 \
      const char* why = nullptr;                                                    \
      cuGetErrorString(r_, &why);                                                   \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, why ? why : "?");     \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

// C threads, each in a context of its own on device 0, running the sequence at once.
double run_contexts(int contexts) {
  CHECK(cudaFree(nullptr));  // initialise the runtime (and cuInit) first
  std::vector<std::thread> pool;
  std::vector<double> sums(contexts);
  for (int c = 0; c < contexts; ++c)
    pool.emplace_back([&, c] {
      CUdevice dev;
      CUcontext ctx;
      CHECK_CU(cuDeviceGet(&dev, 0));
      CHECK_CU(cuCtxCreate(&ctx, nullptr, 0, dev));  // current on this thread
      sums[c] = sequence();
      CHECK_CU(cuCtxSynchronize());
      CHECK_CU(cuCtxDestroy(ctx));
    });
  for (auto& th : pool) th.join();
  double total = 0;
  for (double s : sums) total += s;
  return total;
}

// T threads, one stream each, launching saxpy concurrently.
double run_threads(int threads, int per_thread) {
  std::vector<std::thread> pool;
  std::vector<double> sums(threads);
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      CHECK(cudaSetDevice(0));
      cudaStream_t s;
      CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      const int m = 1 << 16;
      float *x, *y;
      CHECK(cudaMallocAsync(&x, m * sizeof(float), s));
      CHECK(cudaMallocAsync(&y, m * sizeof(float), s));
      fill<<<(m + 255) / 256, 256, 0, s>>>(x, 1.0f + t, m);
      CHECK(cudaMemsetAsync(y, 0, m * sizeof(float), s));
      for (int i = 0; i < per_thread; ++i) saxpy<<<(m + 255) / 256, 256, 0, s>>>(1.0f, x, y, m);
      std::vector<float> h(m);
      CHECK(cudaMemcpyAsync(h.data(), y, m * sizeof(float), cudaMemcpyDeviceToHost, s));
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaFreeAsync(x, s));
      CHECK(cudaFreeAsync(y, s));
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaStreamDestroy(s));
      double sum = 0;
      for (float v : h) sum += v;
      sums[t] = sum;
    });
  for (auto& th : pool) th.join();
  double total = 0;
  for (double s : sums) total += s;
  return total;
}

// A graph of 5 scale kernels, captured from a stream, launched `launches` times.
double run_graph(int launches) {
  CHECK(cudaSetDevice(0));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* y;
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  fill<<<grid, block, 0, s>>>(y, 2.0f, n);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 5; ++i) scale<<<grid, block, 0, s>>>(y, 0.99f, n);
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < launches; ++i) CHECK(cudaGraphLaunch(exec, s));
  std::vector<float> h(n);
  CHECK(cudaMemcpyAsync(h.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFree(y));
  CHECK(cudaStreamDestroy(s));
  double sum = 0;
  for (float v : h) sum += v;
  return sum;
}

int arg(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef PASTA_PROFILE
  // Constructed before the first CUDA call, so it sees every launch (launches_profiler.cpp).
  const auto prof = make_profiler();
  PASTA_SCOPE("main");
#endif
  const int devices = arg(argc, argv, "--devices", 1);
  const int threads = arg(argc, argv, "--threads", 0);
  const int per_thread = arg(argc, argv, "--per-thread", 100);
  const int graphs = arg(argc, argv, "--graph", 0);
  const int contexts = arg(argc, argv, "--contexts", 0);
  int available = 0;
  CHECK(cudaGetDeviceCount(&available));
  if (devices > available) {
    std::fprintf(stderr, "asked for %d devices, %d present\n", devices, available);
    return 2;
  }
  for (int d = 0; d < devices; ++d) std::printf("device %d checksum %.6f\n", d, run_sequence(d));
  if (threads > 0)
    std::printf("threads %d x %d checksum %.6f\n", threads, per_thread,
                run_threads(threads, per_thread));
  if (graphs > 0) std::printf("graph x %d checksum %.6f\n", graphs, run_graph(graphs));
  if (contexts > 0)
    std::printf("contexts %d checksum %.6f\n", contexts, run_contexts(contexts));
  CHECK(cudaDeviceSynchronize());
  return 0;
}
