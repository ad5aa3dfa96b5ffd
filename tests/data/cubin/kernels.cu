// Built into a cubin by tests/CMakeLists.txt for the cubin reader's test:
// two kernels (one a template instance), and a device function that is not
// one; two variables kernels may write (one with an initial value, one in a
// namespace) and a constant they may not.
namespace counts {
__device__ unsigned calls;
}
__device__ int table[4] = {1, 2, 3, 4};
__constant__ float factor;
__device__ __noinline__ float twice(float x) { return 2 * x; }
__global__ void scale_all(float* p) {
  p[threadIdx.x] = twice(p[threadIdx.x]) * factor + table[threadIdx.x % 4];
  atomicAdd(&counts::calls, 1u);
}
template <class T>
__global__ void set_one(T* p) {
  p[0] = 1;
}
template __global__ void set_one<int>(int*);
