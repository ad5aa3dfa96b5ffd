// A cuDNN program: convolution forward, backward data and backward filter
// through the cuDNN API, profiled in-binary with -DPASTA_PROFILE. Picks
// deterministic algorithms so the checksums it prints are exact and must
// not change under profiling.
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#ifdef PASTA_PROFILE
#include "../profiler.hpp"
#endif

// The legacy convolution API is deprecated in cuDNN 9 but still the plain
// way to run one convolution.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define CUDA(call)                                                                     \
  do {                                                                                 \
    cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)
#define CUDNN(call)                                                                     \
  do {                                                                                  \
    cudnnStatus_t s_ = (call);                                                          \
    if (s_ != CUDNN_STATUS_SUCCESS) {                                                   \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudnnGetErrorString(s_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

__global__ void init(float* p, std::size_t n, unsigned seed) {
  std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  p[i] = (h & 0xffff) / 65536.0f - 0.5f;
}

static double checksum(const float* d, std::size_t n) {
  std::vector<float> h(n);
  CUDA(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  double s = 0;
  for (float v : h) s += v;
  return s;
}

static float* alloc_init(std::size_t n, unsigned seed) {
  float* p;
  CUDA(cudaMalloc(&p, n * sizeof(float)));
  init<<<(n + 255) / 256, 256>>>(p, n, seed);
  return p;
}

int main() {
#ifdef PASTA_PROFILE
  const auto prof = make_profiler();  // conv_profiler.cpp
#endif
  const int N = 32, C = 64, H = 56, W = 56, K = 64, R = 3, S = 3;
  cudnnHandle_t h;
  CUDNN(cudnnCreate(&h));
  cudnnTensorDescriptor_t x_desc, y_desc;
  cudnnFilterDescriptor_t w_desc;
  cudnnConvolutionDescriptor_t conv;
  CUDNN(cudnnCreateTensorDescriptor(&x_desc));
  CUDNN(cudnnCreateTensorDescriptor(&y_desc));
  CUDNN(cudnnCreateFilterDescriptor(&w_desc));
  CUDNN(cudnnCreateConvolutionDescriptor(&conv));
  CUDNN(cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, C, H, W));
  CUDNN(cudnnSetFilter4dDescriptor(w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C, R, S));
  CUDNN(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT));
  CUDNN(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH));  // no TF32: exact sums
  int n, c, hh, ww;
  CUDNN(cudnnGetConvolution2dForwardOutputDim(conv, x_desc, w_desc, &n, &c, &hh, &ww));
  CUDNN(cudnnSetTensor4dDescriptor(y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, hh, ww));

  const std::size_t xs = std::size_t(N) * C * H * W, ws = std::size_t(K) * C * R * S,
                    ys = std::size_t(n) * c * hh * ww;
  float* x = alloc_init(xs, 1);
  float* w = alloc_init(ws, 2);
  float* dy = alloc_init(ys, 3);
  float *y, *dx, *dw;
  CUDA(cudaMalloc(&y, ys * sizeof(float)));
  CUDA(cudaMalloc(&dx, xs * sizeof(float)));
  CUDA(cudaMalloc(&dw, ws * sizeof(float)));

  // The first deterministic algorithm of each kind that cuDNN's heuristics rank.
  int found = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[8];
  CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(h, x_desc, w_desc, conv, y_desc, 8, &found, fwd));
  cudnnConvolutionFwdAlgo_t fwd_algo = fwd[0].algo;
  for (int i = found - 1; i >= 0; --i)
    if (fwd[i].status == CUDNN_STATUS_SUCCESS && fwd[i].determinism == CUDNN_DETERMINISTIC)
      fwd_algo = fwd[i].algo;
  cudnnConvolutionBwdDataAlgoPerf_t bwd_data[8];
  CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w_desc, y_desc, conv, x_desc, 8, &found,
                                                    bwd_data));
  cudnnConvolutionBwdDataAlgo_t data_algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  for (int i = found - 1; i >= 0; --i)
    if (bwd_data[i].status == CUDNN_STATUS_SUCCESS &&
        bwd_data[i].determinism == CUDNN_DETERMINISTIC)
      data_algo = bwd_data[i].algo;
  cudnnConvolutionBwdFilterAlgoPerf_t bwd_filter[8];
  CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x_desc, y_desc, conv, w_desc, 8, &found,
                                                      bwd_filter));
  cudnnConvolutionBwdFilterAlgo_t filter_algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  for (int i = found - 1; i >= 0; --i)
    if (bwd_filter[i].status == CUDNN_STATUS_SUCCESS &&
        bwd_filter[i].determinism == CUDNN_DETERMINISTIC)
      filter_algo = bwd_filter[i].algo;

  std::size_t a = 0, b = 0, d = 0;
  CUDNN(cudnnGetConvolutionForwardWorkspaceSize(h, x_desc, w_desc, conv, y_desc, fwd_algo, &a));
  CUDNN(
      cudnnGetConvolutionBackwardDataWorkspaceSize(h, w_desc, y_desc, conv, x_desc, data_algo, &b));
  CUDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x_desc, y_desc, conv, w_desc, filter_algo,
                                                       &d));
  std::size_t bytes = a > b ? a : b;
  bytes = bytes > d ? bytes : d;
  void* workspace = nullptr;
  if (bytes) CUDA(cudaMalloc(&workspace, bytes));

  const float one = 1.0f, zero = 0.0f;
  const int iterations = 5;
  for (int it = 0; it < iterations; ++it) {
    CUDNN(cudnnConvolutionForward(h, &one, x_desc, x, w_desc, w, conv, fwd_algo, workspace, bytes,
                                  &zero, y_desc, y));
    CUDNN(cudnnConvolutionBackwardData(h, &one, w_desc, w, y_desc, dy, conv, data_algo, workspace,
                                       bytes, &zero, x_desc, dx));
    CUDNN(cudnnConvolutionBackwardFilter(h, &one, x_desc, x, y_desc, dy, conv, filter_algo,
                                         workspace, bytes, &zero, w_desc, dw));
  }
  CUDA(cudaDeviceSynchronize());
  std::printf("algorithms fwd %d bwd_data %d bwd_filter %d\n", int(fwd_algo), int(data_algo),
              int(filter_algo));
  std::printf("y %.6e dx %.6e dw %.6e\n", checksum(y, ys), checksum(dx, xs), checksum(dw, ws));
  for (void* p : {static_cast<void*>(x), static_cast<void*>(w), static_cast<void*>(dy),
                  static_cast<void*>(y), static_cast<void*>(dx), static_cast<void*>(dw), workspace})
    if (p) CUDA(cudaFree(p));
  cudnnDestroyTensorDescriptor(x_desc);
  cudnnDestroyTensorDescriptor(y_desc);
  cudnnDestroyFilterDescriptor(w_desc);
  cudnnDestroyConvolutionDescriptor(conv);
  cudnnDestroy(h);
  return 0;
}
