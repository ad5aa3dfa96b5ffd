// access_pattern_pasta's and access_pattern_cpu's profilers, which access_pattern.cu keeps for
// the whole of main (../profiler.hpp).
#include <pasta/nv/sanitizer.hpp>
#include <pasta/pasta.hpp>

#include "../profiler.hpp"

std::shared_ptr<void> make_profiler() {
#if defined(PASTA_PROFILE)
  return std::make_shared<pasta::Profiler<pasta::nv::Sanitizer, pasta::proc::GpuBucketing,
                                          pasta::tools::MemHotness>>();
#else
  return std::make_shared<
      pasta::Profiler<pasta::nv::Sanitizer, pasta::proc::Cpu, pasta::tools::MemHotness>>();
#endif
}
