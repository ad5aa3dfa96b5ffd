// Relaunching a kept launch that needs more dynamic shared memory than its
// function's limit allows now, without breaking the program's own later
// setting of that limit (nv/counters/user_replay.hpp, KeptLaunch::launch).
//
// The program (as cuDNN does) sets the limit with cudaFuncSetAttribute before
// launches of 96 KB, then 48 KB; pasta relaunches the kept 96 KB launch from
// the driver's handle its launch callback saw (a CUkernel for a runtime
// launch), raising the limit around it one of three ways; then the program
// sets 96 KB again and launches: does its launch still work?
//   shared_limit MODE   (MODE: none | function | kernel)
//     none      no relaunch
//     function  cuKernelGetFunction, cuFuncGet/SetAttribute on that function
//     kernel    cuKernelGet/SetAttribute for the device
// Prints one JSON line per mode: the relaunch's result and the program's
// launches after it. Build on the GPU machine:
//   nvcc -std=c++17 -arch=sm_90 -o /tmp/sl bench/gpu/probe/shared_limit.cu \
//     -I$CUPTI_INC -L$CUPTI_LIB -lcupti -lcuda
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include <cstdio>
#include <string>

__global__ void uses_shared(int* out) {
  extern __shared__ int buffer[];
  buffer[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) *out = buffer[31];
}

namespace {

CUfunction seen = nullptr;  // the handle the driver's launch call got

void CUPTIAPI on_launch(void*, CUpti_CallbackDomain, CUpti_CallbackId cbid, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz)
    seen = static_cast<const cuLaunchKernel_params*>(cb->functionParams)->f;
  else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz)
    seen = static_cast<const cuLaunchKernelEx_params*>(cb->functionParams)->f;
}

const char* name(CUresult r) {
  const char* s = nullptr;
  cuGetErrorName(r, &s);
  return s ? s : "?";
}

constexpr int big = 96 << 10, small = 48 << 10;
constexpr auto limit = CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "none";
  CUpti_SubscriberHandle s{};
  cuptiSubscribe(&s, on_launch, nullptr);
  cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_DRIVER_API);
  int* out = nullptr;
  cudaMalloc(&out, sizeof(int));
  cudaFuncSetAttribute(uses_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, big);
  uses_shared<<<1, 32, big>>>(out);
  const cudaError_t first = cudaDeviceSynchronize();
  const CUfunction kept = seen;  // the kept launch's handle
  cudaFuncSetAttribute(uses_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, small);
  uses_shared<<<1, 32, small>>>(out);
  const cudaError_t second = cudaDeviceSynchronize();

  // The relaunch of the kept 96 KB launch, the limit raised around it.
  CUresult relaunch = CUDA_SUCCESS, loaded = cuFuncLoad(kept);
  int before = -1, after = -1;
  CUdevice dev = 0;
  cuCtxGetDevice(&dev);
  void* args[] = {&out};
  if (mode == "function") {
    CUfunction f = kept;
    if (loaded == CUDA_ERROR_INVALID_HANDLE) cuKernelGetFunction(&f, reinterpret_cast<CUkernel>(kept));
    cuFuncGetAttribute(&before, limit, f);
    cuFuncSetAttribute(f, limit, big);
    relaunch = cuLaunchKernel(kept, 1, 1, 1, 32, 1, 1, big, nullptr, args, nullptr);
    cuFuncSetAttribute(f, limit, before);
    cuFuncGetAttribute(&after, limit, f);
  } else if (mode == "kernel") {
    const auto k = reinterpret_cast<CUkernel>(kept);
    cuKernelGetAttribute(&before, limit, k, dev);
    cuKernelSetAttribute(limit, big, k, dev);
    relaunch = cuLaunchKernel(kept, 1, 1, 1, 32, 1, 1, big, nullptr, args, nullptr);
    cuKernelSetAttribute(limit, before, k, dev);
    cuKernelGetAttribute(&after, limit, k, dev);
  }
  const cudaError_t relaunched = cudaDeviceSynchronize();

  // The program again: 96 KB set and launched, then 48 KB.
  const cudaError_t set_big =
      cudaFuncSetAttribute(uses_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, big);
  uses_shared<<<1, 32, big>>>(out);
  const cudaError_t third = cudaGetLastError();
  const cudaError_t third_sync = cudaDeviceSynchronize();
  cudaFuncSetAttribute(uses_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, small);
  uses_shared<<<1, 32, small>>>(out);
  const cudaError_t fourth = cudaGetLastError();
  std::printf(
      "{\"mode\": \"%s\", \"handle_is_kernel\": %s, \"program_96k\": \"%s\", \"program_48k\": "
      "\"%s\", \"limit_before_relaunch\": %d, \"limit_after_restore\": %d, \"relaunch\": \"%s\", "
      "\"relaunch_sync\": \"%s\", \"program_sets_96k\": \"%s\", \"program_96k_again\": \"%s\", "
      "\"its_sync\": \"%s\", \"program_48k_again\": \"%s\"}\n",
      mode.c_str(), loaded == CUDA_ERROR_INVALID_HANDLE ? "true" : "false",
      cudaGetErrorName(first), cudaGetErrorName(second), before, after, name(relaunch),
      cudaGetErrorName(relaunched), cudaGetErrorName(set_big), cudaGetErrorName(third),
      cudaGetErrorName(third_sync), cudaGetErrorName(fourth));
  return 0;
}
