// The parts of CUPTI the handler uses, included piecewise: cupti.h cannot
// share a translation unit with the Sanitizer API's sanitizer.h (both
// define the CUDA_*_v1 placeholder structs).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_nvtx_cbid.h>
#include <cupti_result.h>
#include <cupti_runtime_cbid.h>
#include <generated_nvtx_meta.h>

#include <string>

#include <pasta/core/detail/fmt.hpp>

namespace pasta::nv::detail {

// The parameter blocks of the launch callbacks pasta reads. They mirror
// cudaLaunchKernel_v7000_params, cudaLaunchKernelExC_v11060_params,
// cuLaunchKernel_params and cuLaunchKernelEx_params: the CUPTI headers that
// define those need placeholder types that sanitizer.h defines again.
struct RuntimeLaunchParams {  // cudaLaunchKernel, cudaLaunchCooperativeKernel
  const void* func;
  dim3 gridDim;
  dim3 blockDim;
  void** args;
  size_t sharedMem;
  cudaStream_t stream;
};
struct RuntimeLaunchExParams {  // cudaLaunchKernelExC
  const cudaLaunchConfig_t* config;
  const void* func;
  void** args;
};
struct DriverLaunchParams {  // cuLaunchKernel, cuLaunchCooperativeKernel
  CUfunction f;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  void** kernelParams;
  void** extra;
};
struct DriverLaunchExParams {  // cuLaunchKernelEx
  const CUlaunchConfig* config;
  CUfunction f;
  void** kernelParams;
  void** extra;
};

inline std::string cupti_error(CUptiResult r) {
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || !text) text = "unknown error";
  return fmt::format("{} ({})", text, static_cast<int>(r));
}

}  // namespace pasta::nv::detail
