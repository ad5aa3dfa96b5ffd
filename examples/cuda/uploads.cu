// Uploads between launches, as PyTorch's copy of a model to the device makes
// them: for each of 6 buffers a kernel of its own signature fills it (as
// deterministic mode fills a new tensor), then the host sends its data into
// it and waits (cudaMemcpy for the even ones, cudaMemcpyAsync and
// cudaStreamSynchronize for the odd ones). A kernel then sums the 6 buffers
// element by element and the host reads the sums: each must be what the host
// sent, summed, whatever a profiler replayed in between.
//
// Under `pasta run --counters` the 7 launches are replayed in one batch, at
// the read (gpu: counters_uploads): the 6 waits after an upload leave the
// kept launches kept. Before that each wait replayed the batch (7 replays,
// one launch each, for the same measurements). Alone:
//   nvcc -std=c++17 -arch=sm_90 -o /tmp/up examples/cuda/uploads.cu
//   /tmp/up; PASTA_VERBOSE=1 pasta run --counters -- /tmp/up
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

constexpr int buffers = 6;
constexpr int elements = 1 << 22;  // 16 MiB a buffer: its DRAM reads dwarf L2's leftovers

__global__ void fill(float* b, int n, float value) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    b[i] = value;
}

__global__ void sum(float* const* b, float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float s = 0;
    for (int k = 0; k < buffers; ++k) s += b[k][i];
    out[i] = s;
  }
}

int main() {
  std::vector<float*> device(buffers);
  float** table = nullptr;
  float* out = nullptr;
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return 1;
  for (auto& b : device)
    if (cudaMalloc(&b, elements * sizeof(float)) != cudaSuccess) return 1;
  if (cudaMalloc(&table, buffers * sizeof(float*)) != cudaSuccess ||
      cudaMalloc(&out, elements * sizeof(float)) != cudaSuccess)
    return 1;
  cudaMemcpy(table, device.data(), buffers * sizeof(float*), cudaMemcpyHostToDevice);
  std::vector<float> host(elements);
  for (int k = 0; k < buffers; ++k) {
    fill<<<k + 1, 256>>>(device[k], elements, -1.0f);  // a grid of its own: a signature of its own
    for (int i = 0; i < elements; ++i) host[i] = static_cast<float>((i + k) % 7);
    const std::size_t bytes = elements * sizeof(float);
    if (k % 2 == 0) {
      cudaMemcpy(device[k], host.data(), bytes, cudaMemcpyHostToDevice);
    } else {
      cudaMemcpyAsync(device[k], host.data(), bytes, cudaMemcpyHostToDevice, stream);
      cudaStreamSynchronize(stream);
    }
  }
  sum<<<264, 256>>>(table, out, elements);
  cudaMemcpy(host.data(), out, elements * sizeof(float), cudaMemcpyDeviceToHost);
  const cudaError_t err = cudaDeviceSynchronize();
  long wrong = 0;
  for (int i = 0; i < elements; ++i) {
    float want = 0;
    for (int k = 0; k < buffers; ++k) want += static_cast<float>((i + k) % 7);
    wrong += host[i] != want;
  }
  std::printf("{\"buffers\": %d, \"elements\": %d, \"wrong_sums\": %ld, \"error\": \"%s\"}\n",
              buffers, elements, wrong, cudaGetErrorName(err));
  return wrong == 0 && err == cudaSuccess ? 0 : 2;
}
