// PASTA_INJECT(ProfilerType): turns the translation unit into a library for
// CUDA_INJECTION64_PATH, so an unmodified program (a Python script running
// PyTorch included) is profiled. The CUDA driver calls InitializeInjection
// during cuInit; the profiler lives until the process exits, when an atexit
// handler stops it and writes the reports.
#pragma once

#include <atomic>
#include <cstdlib>
#include <exception>
#include <string>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/config.hpp>

#include <pasta/core/log.hpp>

namespace pasta::nv::detail {

template <class Profiler>
int initialize_injection() noexcept {
  static std::atomic<Profiler*> instance{nullptr};
  if (instance.load()) return 1;
  try {
    // Never deleted: CUDA's own teardown may still deliver records, and
    // the reports are written by the atexit handler below.
    auto* prof = new Profiler();
    instance.store(prof);
    std::atexit([] {
      if (Profiler* p = instance.load()) p->stop();
    });
  } catch (const std::exception& e) {
    pasta::detail::log(fmt::format("injection failed: {}; the program runs unprofiled", e.what()));
  } catch (...) {
    pasta::detail::log("injection failed; the program runs unprofiled");
  }
  return 1;
}

}  // namespace pasta::nv::detail

// pasta_tool_names() lets `pasta run` and its tests check which tools a
// library has without starting it.
#define PASTA_INJECT(...)                                                                \
  extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {      \
    return ::pasta::nv::detail::initialize_injection<__VA_ARGS__>();                     \
  }                                                                                      \
  extern "C" __attribute__((visibility("default"))) const char* pasta_tool_names(void) { \
    return ::pasta::detail::tool_names<__VA_ARGS__>();                                   \
  }
