// What a small kernel's "DRAM bytes written" contains, in ncu and in pasta
// (issue 56): kernels with known traffic, each launched once right after a
// kernel that leaves L2 full of dirty lines (`dirty`, 512 MB written), as in
// a model's step. bench/gpu/probe/dram_writes.py runs it under ncu's kernel
// and application replay, with and without --cache-control all, with pasta's
// whole metric set and with the DRAM metrics alone (one pass: nothing saved
// or restored between passes), and under `pasta run --counters`.
//
//   write_64k, write_1m, write_8m  store N bytes, read nothing
//   rmw_1m                         read and write the same 1 MB in place
//   read_1m                        read 1 MB, store one word a block
//   copy_1m                        read 1 MB, write another 1 MB (an elementwise op)
//   gather_256k                    256 KB written from rows of a 64 MB table
//                                  (an embedding lookup)
//   *_pool                         write_1m, copy_1m and gather_256k again, their
//                                  buffers inside the 512 MB allocation `dirty`
//                                  writes, as tensors live in PyTorch's pooled
//                                  segments (a replay saves and restores whole
//                                  allocations)
// Prints one checksum line, so a profiled run can be compared with a plain one.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CR(x)                                                       \
  do {                                                              \
    cudaError_t e_ = (x);                                           \
    if (e_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                 \
    }                                                               \
  } while (0)

__global__ void dirty(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = v + float(i & 7);
}
__device__ void store(float* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = float(i);
}
__global__ void write_64k(float* p, size_t n) { store(p, n); }
__global__ void write_1m(float* p, size_t n) { store(p, n); }
__global__ void write_1m_pool(float* p, size_t n) { store(p, n); }
__global__ void write_8m(float* p, size_t n) { store(p, n); }
__global__ void rmw_1m(float* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = p[i] * 0.5f + 1.0f;
}
__global__ void read_1m(const float* p, size_t n, float* sums) {
  float s = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    s += p[i];
  if (s == 12345.678f) sums[blockIdx.x] = s;  // never in practice: the loads are live
}
__global__ void copy_1m(const float* in, float* out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = in[i] * 2.0f;
}
__global__ void copy_1m_pool(const float* in, float* out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = in[i] * 2.0f;
}
// 256 KB out: 256 rows of 256 floats, row r taken from table row (r * 7919) mod rows.
__global__ void gather_256k(const float* table, size_t rows, float* out) {
  const size_t r = blockIdx.x, src = (r * 7919) % rows;
  out[r * 256 + threadIdx.x] = table[src * 256 + threadIdx.x];
}
__global__ void gather_256k_pool(const float* table, size_t rows, float* out) {
  const size_t r = blockIdx.x, src = (r * 7919) % rows;
  out[r * 256 + threadIdx.x] = table[src * 256 + threadIdx.x];
}

int main() {
  const size_t big = (512u << 20) / 4, k64 = (64u << 10) / 4, m1 = (1u << 20) / 4,
               m8 = (8u << 20) / 4, rows = (64u << 20) / 1024;
  float *d, *w64, *w1, *w8, *rw, *rd, *cin, *cout, *table, *gout, *sums;
  CR(cudaMalloc(&d, big * 4));
  CR(cudaMalloc(&w64, k64 * 4));
  CR(cudaMalloc(&w1, m1 * 4));
  CR(cudaMalloc(&w8, m8 * 4));
  CR(cudaMalloc(&rw, m1 * 4));
  CR(cudaMalloc(&rd, m1 * 4));
  CR(cudaMalloc(&cin, m1 * 4));
  CR(cudaMalloc(&cout, m1 * 4));
  CR(cudaMalloc(&table, rows * 1024));
  CR(cudaMalloc(&gout, 256 * 1024));
  CR(cudaMalloc(&sums, 1024 * 4));
  for (float* p : {rw, rd, cin}) CR(cudaMemset(p, 0x3c, m1 * 4));
  CR(cudaMemset(table, 0x3c, rows * 1024));
  CR(cudaDeviceSynchronize());
  int step = 0;
  auto after_dirty = [&](auto launch) {
    dirty<<<1056, 256>>>(d, big, float(++step));
    launch();
    CR(cudaGetLastError());
    CR(cudaDeviceSynchronize());
  };
  after_dirty([&] { write_64k<<<64, 256>>>(w64, k64); });
  after_dirty([&] { write_1m<<<264, 256>>>(w1, m1); });
  after_dirty([&] { write_8m<<<1056, 256>>>(w8, m8); });
  after_dirty([&] { rmw_1m<<<264, 256>>>(rw, m1); });
  after_dirty([&] { read_1m<<<264, 256>>>(rd, m1, sums); });
  after_dirty([&] { copy_1m<<<264, 256>>>(cin, cout, m1); });
  after_dirty([&] { gather_256k<<<256, 256>>>(table, rows, gout); });
  // In the pool, at 100 MB (written), 120 and 121 MB (copied), 200 MB (a 64 MB table) and
  // 300 MB (gathered into); `dirty` overwrites all of it before each.
  const size_t mb = (1u << 20) / 4;
  after_dirty([&] { write_1m_pool<<<264, 256>>>(d + 100 * mb, m1); });
  after_dirty([&] { copy_1m_pool<<<264, 256>>>(d + 120 * mb, d + 121 * mb, m1); });
  after_dirty([&] { gather_256k_pool<<<256, 256>>>(d + 200 * mb, rows, d + 300 * mb); });
  double sum = 0;
  float host[256];
  for (float* p : {w64, w1, w8, rw, cout, gout, d + 100 * mb, d + 121 * mb, d + 300 * mb}) {
    CR(cudaMemcpy(host, p, sizeof host, cudaMemcpyDeviceToHost));
    for (float v : host) sum += v;
  }
  std::printf("checksum %.6f\n", sum);
  return 0;
}
