// Built into a cubin by tests/CMakeLists.txt for the cubin reader's test:
// two kernels (one a template instance), and a device function that is not one.
__device__ __noinline__ float twice(float x) { return 2 * x; }
__global__ void scale_all(float* p) { p[threadIdx.x] = twice(p[threadIdx.x]); }
template <class T>
__global__ void set_one(T* p) {
  p[0] = 1;
}
template __global__ void set_one<int>(int*);
