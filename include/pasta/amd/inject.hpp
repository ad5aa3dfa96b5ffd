// PASTA_ROCPROFILER_TOOL(ProfilerType): turns the translation unit into a
// rocprofiler-sdk tool library, so an unmodified HIP program is profiled:
//
//   ROCP_TOOL_LIBRARIES=/path/libmy_pasta_tool.so ./program
//
// rocprofiler-sdk calls the library's rocprofiler_configure when the HIP
// runtime starts; the profiler is constructed in the tool's initialisation
// (where contexts may be created) and stopped, writing its reports, when
// rocprofiler-sdk finalises its tools at exit.
#pragma once

#include <rocprofiler-sdk/registration.h>

#include <atomic>
#include <cstdint>
#include <exception>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/amd/rocprofiler.hpp>
#include <pasta/core/config.hpp>
#include <pasta/core/log.hpp>

namespace pasta::amd::detail {

template <class Profiler>
std::atomic<Profiler*>& tool_instance() {
  static std::atomic<Profiler*> instance{nullptr};
  return instance;
}

template <class Profiler>
int tool_initialize(rocprofiler_client_finalize_t, void*) {
  Registration& reg = registration();
  reg.inside_initialize = true;
  try {
    // Never deleted: rocprofiler-sdk may deliver records while the process
    // tears down.
    tool_instance<Profiler>().store(new Profiler());
  } catch (const std::exception& e) {
    pasta::detail::log(fmt::format("tool start failed: {}; the program runs unprofiled", e.what()));
  } catch (...) {
    pasta::detail::log("tool start failed; the program runs unprofiled");
  }
  reg.inside_initialize = false;
  return 0;  // 0: rocprofiler-sdk keeps the tool (a failed start records nothing)
}

template <class Profiler>
void tool_finalize(void*) {
  if (Profiler* p = tool_instance<Profiler>().load()) p->stop();
}

}  // namespace pasta::amd::detail

#define PASTA_ROCPROFILER_TOOL(...)                                                               \
  extern "C" __attribute__((visibility("default"))) rocprofiler_tool_configure_result_t*          \
  rocprofiler_configure(std::uint32_t, const char*, std::uint32_t,                                \
                        rocprofiler_client_id_t* client) {                                        \
    return ::pasta::amd::detail::tool_result<&::pasta::amd::detail::tool_initialize<__VA_ARGS__>, \
                                             &::pasta::amd::detail::tool_finalize<__VA_ARGS__>>(  \
        client);                                                                                  \
  }                                                                                               \
  extern "C" __attribute__((visibility("default"))) const char* pasta_tool_names(void) {          \
    return ::pasta::detail::tool_names<__VA_ARGS__>();                                            \
  }
