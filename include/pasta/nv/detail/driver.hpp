// The CUDA driver entry points pasta's own device work calls (the L2 flush,
// saving and restoring memory around a replayed launch, the replay itself,
// nv::Sanitizer's post-pass), looked up in the libcuda the process already
// loaded, so nothing links against libcuda.
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include <pasta/core/detail/fmt.hpp>

namespace pasta::nv::detail {

struct Driver {
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*device_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*module_unload)(CUmodule) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, std::size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*mem_info)(std::size_t*, std::size_t*) = nullptr;
  CUresult (*copy)(CUdeviceptr, CUdeviceptr, std::size_t, CUstream) = nullptr;
  CUresult (*copy_to_device)(CUdeviceptr, const void*, std::size_t) = nullptr;  // synchronous
  // The allocation that holds an address (nullptr if the driver lacks it).
  CUresult (*address_range)(CUdeviceptr*, std::size_t*, CUdeviceptr) = nullptr;
  CUresult (*stream_synchronize)(CUstream) = nullptr;
  CUresult (*stream_is_capturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*launch_ex)(const CUlaunchConfig*, CUfunction, void**, void**) = nullptr;
  CUresult (*launch_cooperative)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, unsigned, CUstream, void**) = nullptr;
  CUresult (*push)(CUcontext) = nullptr;
  CUresult (*pop)(CUcontext*) = nullptr;
  CUresult (*error_name)(CUresult, const char**) = nullptr;
  CUresult (*error_string)(CUresult, const char**) = nullptr;
  // A kernel parameter's offset and size, of a function (loaded first: a
  // lazily loaded one is not before its first launch runs) or of a CUkernel
  // (the handle the runtime's launches pass): CUDA 12.4 and later; nullptr
  // in an older driver, where launches cannot be kept to replay later.
  CUresult (*param_info)(CUfunction, std::size_t, std::size_t*, std::size_t*) = nullptr;
  CUresult (*kernel_param_info)(CUkernel, std::size_t, std::size_t*, std::size_t*) = nullptr;
  CUresult (*function_load)(CUfunction) = nullptr;
  // A function's and a CUkernel's attributes (the dynamic shared memory
  // limit, which a library may set before each launch: cudaFuncSetAttribute
  // sets a CUkernel's for the device); nullptr where the driver lacks them.
  CUresult (*function_attribute)(int*, CUfunction_attribute, CUfunction) = nullptr;
  CUresult (*set_function_attribute)(CUfunction, CUfunction_attribute, int) = nullptr;
  CUresult (*kernel_attribute)(int*, CUfunction_attribute, CUkernel, CUdevice) = nullptr;
  CUresult (*set_kernel_attribute)(CUfunction_attribute, int, CUkernel, CUdevice) = nullptr;
  // Where a kernel's `__device__` variables are: its module (or a
  // CUkernel's library, or its function in the current context) and a
  // variable's address and size there; nullptr where the driver lacks them.
  CUresult (*function_module)(CUmodule*, CUfunction) = nullptr;
  CUresult (*module_global)(CUdeviceptr*, std::size_t*, CUmodule, const char*) = nullptr;
  CUresult (*kernel_library)(CUlibrary*, CUkernel) = nullptr;
  CUresult (*library_global)(CUdeviceptr*, std::size_t*, CUlibrary, const char*) = nullptr;
  CUresult (*kernel_function)(CUfunction*, CUkernel) = nullptr;
  // Many copies in one call, in any order among themselves (CUDA 13.0's
  // cuMemcpyBatchAsync_v2; nullptr before). Not on the legacy NULL stream.
  CUresult (*copy_batch)(CUdeviceptr*, CUdeviceptr*, std::size_t*, std::size_t,
                         CUmemcpyAttributes*, std::size_t*, std::size_t, CUstream) = nullptr;
  // A function's or a CUkernel's name (CUDA 12.3 and later; nullptr before).
  CUresult (*function_name)(const char**, CUfunction) = nullptr;
  CUresult (*kernel_name)(const char**, CUkernel) = nullptr;

  bool bound() const { return error_name != nullptr; }

  // Looks the entry points up; throws std::runtime_error if libcuda is not
  // loaded or lacks one.
  void bind() {
    if (bound()) return;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) throw std::runtime_error("libcuda.so.1 is not loaded in this process");
    try {
      get(lib, ctx_get_device, "cuCtxGetDevice");
      get(lib, ctx_synchronize, "cuCtxSynchronize");
      get(lib, ctx_set_current, "cuCtxSetCurrent");
      get(lib, device_attribute, "cuDeviceGetAttribute");
      get(lib, module_load_data, "cuModuleLoadData");
      get(lib, module_function, "cuModuleGetFunction");
      get(lib, module_unload, "cuModuleUnload");
      get(lib, mem_alloc, "cuMemAlloc_v2");
      get(lib, mem_free, "cuMemFree_v2");
      get(lib, mem_info, "cuMemGetInfo_v2");
      get(lib, copy, "cuMemcpyDtoDAsync_v2");
      get(lib, copy_to_device, "cuMemcpyHtoD_v2");
      get(lib, stream_synchronize, "cuStreamSynchronize");
      get(lib, stream_is_capturing, "cuStreamIsCapturing");
      get(lib, launch, "cuLaunchKernel");
      get(lib, launch_ex, "cuLaunchKernelEx");
      get(lib, launch_cooperative, "cuLaunchCooperativeKernel");
      get(lib, push, "cuCtxPushCurrent_v2");
      get(lib, pop, "cuCtxPopCurrent_v2");
      get(lib, error_name, "cuGetErrorName");
      get(lib, error_string, "cuGetErrorString");
      param_info = reinterpret_cast<decltype(param_info)>(dlsym(lib, "cuFuncGetParamInfo"));
      kernel_param_info =
          reinterpret_cast<decltype(kernel_param_info)>(dlsym(lib, "cuKernelGetParamInfo"));
      function_load = reinterpret_cast<decltype(function_load)>(dlsym(lib, "cuFuncLoad"));
      function_name = reinterpret_cast<decltype(function_name)>(dlsym(lib, "cuFuncGetName"));
      function_attribute =
          reinterpret_cast<decltype(function_attribute)>(dlsym(lib, "cuFuncGetAttribute"));
      set_function_attribute =
          reinterpret_cast<decltype(set_function_attribute)>(dlsym(lib, "cuFuncSetAttribute"));
      kernel_attribute =
          reinterpret_cast<decltype(kernel_attribute)>(dlsym(lib, "cuKernelGetAttribute"));
      set_kernel_attribute =
          reinterpret_cast<decltype(set_kernel_attribute)>(dlsym(lib, "cuKernelSetAttribute"));
      kernel_name = reinterpret_cast<decltype(kernel_name)>(dlsym(lib, "cuKernelGetName"));
      function_module =
          reinterpret_cast<decltype(function_module)>(dlsym(lib, "cuFuncGetModule"));
      module_global = reinterpret_cast<decltype(module_global)>(dlsym(lib, "cuModuleGetGlobal_v2"));
      kernel_library =
          reinterpret_cast<decltype(kernel_library)>(dlsym(lib, "cuKernelGetLibrary"));
      library_global =
          reinterpret_cast<decltype(library_global)>(dlsym(lib, "cuLibraryGetGlobal"));
      kernel_function =
          reinterpret_cast<decltype(kernel_function)>(dlsym(lib, "cuKernelGetFunction"));
      copy_batch = reinterpret_cast<decltype(copy_batch)>(dlsym(lib, "cuMemcpyBatchAsync_v2"));
      address_range =
          reinterpret_cast<decltype(address_range)>(dlsym(lib, "cuMemGetAddressRange_v2"));
    } catch (...) {
      dlclose(lib);
      error_name = nullptr;
      throw;
    }
    dlclose(lib);  // RTLD_NOLOAD took a reference; the program's own stays
  }

  // The error's name, as the driver gives it.
  std::string name(CUresult r) const {
    const char* text = nullptr;
    if (error_name) error_name(r, &text);
    return text ? text : std::to_string(static_cast<int>(r));
  }
  // Throws std::runtime_error naming `what` and the driver's error.
  void call(CUresult r, const char* what) const {
    if (r == CUDA_SUCCESS) return;
    throw std::runtime_error(fmt::format("{}: {}", what, name(r)));
  }

  // Runs f() with `ctx` current, if the driver still has that context.
  template <class F>
  void in_context(CUcontext ctx, F&& f) const {
    if (push(ctx) != CUDA_SUCCESS) return;
    f();
    CUcontext popped = nullptr;
    pop(&popped);
  }

  // Whether work launched on `stream` now is captured into a graph rather
  // than run; also when the driver will not say (the legacy stream while
  // another stream captures in global mode): pasta then leaves it alone.
  bool capturing(CUstream stream) const {
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    return stream_is_capturing(stream, &capture) != CUDA_SUCCESS ||
           capture != CU_STREAM_CAPTURE_STATUS_NONE;
  }

 private:
  template <class F>
  static void get(void* lib, F& fn, const char* name) {
    fn = reinterpret_cast<F>(dlsym(lib, name));
    if (!fn) throw std::runtime_error(fmt::format("libcuda has no {}", name));
  }
};

// The process's driver entry points, bound by the first call made once
// libcuda is loaded (inside a CUDA callback it always is). Before that it
// throws std::runtime_error, and the next call tries again.
inline const Driver& loaded_driver() {
  static const Driver driver = [] {
    Driver d;
    d.bind();
    return d;
  }();
  return driver;
}

}  // namespace pasta::nv::detail
