// The `__device__` variables of the kernels counters replay. A kernel may
// write them (a counter, a flag, a queue's head), and a replay pass runs it
// again: they are saved and restored with the program's allocations, or the
// program would see each measured launch's writes once per pass (on an
// H200, a kernel adding one to a `__device__` counter at each of 6 launches
// left it at 24 under user replay, 6 under CUPTI's kernel replay and ncu:
// examples/cuda/device_variables.cu).
//
// Module memory is not among the allocations the driver's calls report, and
// the driver lists no module's variables: their names come from the image
// CUPTI hands over as each module loads (its ELF symbol table), filed under
// the names of the image's kernels; a replayed kernel's variables are then
// looked up by name in its own module (or its CUkernel's library) in the
// current context, with the allocation that holds each, once per launch
// handle.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <pasta/nv/counters/replay_memory.hpp>
#include <pasta/nv/detail/cubin.hpp>
#include <pasta/nv/detail/driver.hpp>

namespace pasta::nv::detail {

class ModuleVariables {
 public:
  // A module's image, as it loads (any thread): its variables' names under
  // each of its kernels' names. An image with no variable costs nothing more.
  void loaded(std::span<const std::byte> image) {
    std::vector<std::string> variables;
    for_each_device_variable(image, [&](std::string_view n) { variables.emplace_back(n); });
    if (variables.empty()) return;
    std::vector<std::string> kernels;
    for_each_kernel(image, [&](std::string_view n) { kernels.emplace_back(n); });
    std::lock_guard lock(mutex_);
    for (const std::string& kernel : kernels) {
      auto& names = by_kernel_[kernel];
      for (const std::string& v : variables)
        if (std::ranges::find(names, v) == names.end()) names.push_back(v);
    }
  }

  // The variables of the kernel a launch names by `f` (a function, or a
  // CUkernel for the runtime's launches), in the current context: their
  // address ranges, looked up once per handle; none where the driver cannot
  // say (and `missed()` counts the names it would not find). The kernel's
  // module is loaded first (a lazily loaded one is not before its first
  // launch runs, and a replay comes before that), so its image has come to
  // loaded(); no lock is held across a driver call, since a load hands its
  // image to loaded() on this thread.
  std::vector<Variable> of(const Driver& driver, CUfunction f) {
    {
      std::lock_guard lock(mutex_);
      if (auto it = cache_.find(f); it != cache_.end()) return it->second;
    }
    // A handle cuFuncLoad does not know is a CUkernel (as KeptLaunch finds).
    const CUresult load = driver.function_load ? driver.function_load(f) : CUDA_ERROR_NOT_SUPPORTED;
    const bool kernel = load == CUDA_ERROR_INVALID_HANDLE;
    CUfunction in_context{};
    if (kernel && driver.kernel_function &&
        driver.kernel_function(&in_context, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS &&
        driver.function_load)
      driver.function_load(in_context);
    const char* name = nullptr;
    if (kernel ? !driver.kernel_name ||
                     driver.kernel_name(&name, reinterpret_cast<CUkernel>(f)) != CUDA_SUCCESS
               : !driver.function_name || driver.function_name(&name, f) != CUDA_SUCCESS)
      name = nullptr;
    std::vector<std::string> names;
    {
      std::lock_guard lock(mutex_);
      if (const auto it = name ? by_kernel_.find(name) : by_kernel_.end(); it != by_kernel_.end())
        names = it->second;
    }
    std::vector<Variable> out;
    std::size_t missed = 0;
    for (const std::string& variable : names) {
      CUdeviceptr base = 0, region = 0;
      std::size_t bytes = 0, region_bytes = 0;
      if (!address(driver, kernel ? in_context : f, f, kernel, variable.c_str(), base, bytes) ||
          !bytes) {
        ++missed;
        continue;
      }
      if (!driver.address_range ||
          driver.address_range(&region, &region_bytes, base) != CUDA_SUCCESS)
        region = 0;
      out.push_back({base, bytes, region});
    }
    std::lock_guard lock(mutex_);
    missed_ += missed;
    cache_[f] = out;
    return out;
  }

  // A module unloading: the handles' lookups are forgotten (a handle may name
  // another kernel later). The images' names stay: a module loaded again
  // hands its image over again.
  void forget() {
    std::lock_guard lock(mutex_);
    cache_.clear();
  }
  // Variables named in an image that the driver would not find for a launch.
  std::size_t missed() const {
    std::lock_guard lock(mutex_);
    return missed_;
  }

 private:
  // A CUkernel's through its library, else through its function in the
  // current context; a function's through its module.
  static bool address(const Driver& driver, CUfunction function, CUfunction handle, bool kernel,
                      const char* variable, CUdeviceptr& base, std::size_t& bytes) {
    if (kernel) {
      CUlibrary library{};
      if (driver.kernel_library && driver.library_global &&
          driver.kernel_library(&library, reinterpret_cast<CUkernel>(handle)) == CUDA_SUCCESS &&
          driver.library_global(&base, &bytes, library, variable) == CUDA_SUCCESS)
        return true;
      if (!function) return false;
    }
    CUmodule module{};
    return driver.function_module && driver.module_global &&
           driver.function_module(&module, function) == CUDA_SUCCESS &&
           driver.module_global(&base, &bytes, module, variable) == CUDA_SUCCESS;
  }

  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::vector<std::string>> by_kernel_;
  std::unordered_map<CUfunction, std::vector<Variable>> cache_;
  std::size_t missed_ = 0;
};

}  // namespace pasta::nv::detail
