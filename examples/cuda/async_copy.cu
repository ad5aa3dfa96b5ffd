// Tiles of one array staged in shared memory by the three asynchronous
// copies Hopper kernels (cuBLAS, cuDNN, flash attention) load with, then
// summed, one tile per block: which of them a memory-access tool sees.
//   staged_sum  cp.async (LDGSTS), 16 bytes per thread, from sm_80
//   bulk_sum    cp.async.bulk (UBLKCP), one 1 KiB copy per block, from sm_90
//   tensor_sum  cp.async.bulk.tensor (UTMALDG) through a tensor map, from sm_90
// Prints "checksum" (must not change under profiling), the tiles each
// kernel copied, and which kernels ran (the bulk ones need sm_90).
//   async_copy [--blocks N]
#include <cuda.h>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <cuda/barrier>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "check.cuh"

namespace {
constexpr unsigned tile = 256;          // floats: 1 KiB, the longest box row a tensor map allows
constexpr unsigned threads = tile / 4;  // cp.async: 16 bytes a thread

using Barrier = cuda::barrier<cuda::thread_scope_block>;
}  // namespace

// Kernels at namespace scope: their names read plainly in the reports.
__global__ void fill(float* p, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<float>(i % 97) * 0.25f;
}

// One thread sums the tile in order: the same sum on every run.
__device__ void sum_tile(const float* s, float* out) {
  if (threadIdx.x != 0) return;
  float sum = 0.f;
  for (unsigned i = 0; i < tile; ++i) sum += s[i];
  out[blockIdx.x] = sum;
}

__global__ void staged_sum(const float* src, float* out) {
  __shared__ alignas(16) float s[tile];
  const size_t base = blockIdx.x * static_cast<size_t>(tile) + threadIdx.x * 4;
  __pipeline_memcpy_async(&s[threadIdx.x * 4], &src[base], 16);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  sum_tile(s, out);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define PASTA_BULK 1
namespace cde = cuda::device::experimental;
// Thread 0 starts the copy and arrives expecting its bytes; the block waits.
template <class Copy>
__device__ void bulk_tile(float* s, Barrier& bar, Copy copy) {
  if (threadIdx.x == 0) {
    init(&bar, blockDim.x);
    cde::fence_proxy_async_shared_cta();
  }
  __syncthreads();
  Barrier::arrival_token token;
  if (threadIdx.x == 0) {
    copy();
    token = cuda::device::barrier_arrive_tx(bar, 1, tile * sizeof(float));
  } else {
    token = bar.arrive();
  }
  bar.wait(std::move(token));
}
#endif

__global__ void bulk_sum(const float* src, float* out) {
#if defined(PASTA_BULK)
  __shared__ alignas(128) float s[tile];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ Barrier bar;
  bulk_tile(s, bar, [&] {
    cde::cp_async_bulk_global_to_shared(s, src + blockIdx.x * static_cast<size_t>(tile),
                                        tile * sizeof(float), bar);
  });
  sum_tile(s, out);
#endif
}

__global__ void tensor_sum(const __grid_constant__ CUtensorMap map, float* out) {
#if defined(PASTA_BULK)
  __shared__ alignas(128) float s[tile];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ Barrier bar;
  bulk_tile(s, bar, [&] {
    cde::cp_async_bulk_tensor_2d_global_to_shared(s, &map, 0, static_cast<int>(blockIdx.x), bar);
  });
  sum_tile(s, out);
#endif
}

namespace {

// A 2-D tensor map over the tiles, one row of `tile` floats each, boxes of one row (a rank-1 map
// has no row stride, and the driver refuses it without one).
CUtensorMap tensor_map(float* src, unsigned rows) {
  using Encode =
      CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                         &found));
  if (!fn || found != cudaDriverEntryPointSuccess) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled not found\n");
    std::exit(1);
  }
  CUtensorMap map{};
  const cuuint64_t dims[] = {tile, rows}, row_bytes[] = {tile * sizeof(float)};
  const cuuint32_t box[] = {tile, 1}, steps[] = {1, 1};
  const CUresult r = reinterpret_cast<Encode>(fn)(
      &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, src, dims, row_bytes, box, steps,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed: %d\n", static_cast<int>(r));
    std::exit(1);
  }
  return map;
}

}  // namespace

int main(int argc, char** argv) {
  unsigned blocks = 4096;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--blocks") == 0 && i + 1 < argc) {
      blocks = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    } else {
      std::fprintf(stderr, "usage: %s [--blocks N]\n", argv[0]);
      return 2;
    }
  }
  const size_t n = static_cast<size_t>(blocks) * tile;
  float *src, *out;
  CHECK(cudaMalloc(&src, n * sizeof(float)));
  CHECK(cudaMalloc(&out, blocks * sizeof(float)));
  fill<<<256, 256>>>(src, n);
  CHECK(cudaGetLastError());
  std::vector<float> expect(blocks), got(blocks);
  for (unsigned b = 0; b < blocks; ++b) {
    float sum = 0.f;
    for (unsigned i = 0; i < tile; ++i)
      sum += static_cast<float>((static_cast<size_t>(b) * tile + i) % 97) * 0.25f;
    expect[b] = sum;
  }
  int device = 0, major = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  double checksum = 0;
  int ran = 0;
  auto check = [&](const char* kernel) {
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got.data(), out, blocks * sizeof(float), cudaMemcpyDeviceToHost));
    for (unsigned b = 0; b < blocks; ++b) {
      if (got[b] != expect[b]) {
        std::fprintf(stderr, "%s: tile %u summed to %g, not %g\n", kernel, b, got[b], expect[b]);
        std::exit(1);
      }
      checksum += got[b];
    }
    std::printf("%s: %u tiles\n", kernel, blocks);
    ++ran;
  };
  staged_sum<<<blocks, threads>>>(src, out);
  check("staged_sum");
  if (major >= 9) {
    bulk_sum<<<blocks, threads>>>(src, out);
    check("bulk_sum");
    tensor_sum<<<blocks, threads>>>(tensor_map(src, blocks), out);
    check("tensor_sum");
  } else {
    std::printf("bulk_sum, tensor_sum: skipped (compute capability %d, they need 9.0)\n", major);
  }
  std::printf("checksum %.6f over %d kernels\n", checksum, ran);
  CHECK(cudaFree(src));
  CHECK(cudaFree(out));
  return 0;
}
