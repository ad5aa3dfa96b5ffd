// uvm_advice_pasta's and uvm_advice_cpu's profilers, which uvm_advice.cu keeps for the whole of
// main (../profiler.hpp).
#include <pasta/nv/sanitizer.hpp>
#include <pasta/pasta.hpp>

#include "../profiler.hpp"

std::shared_ptr<void> make_profiler() {
#if defined(PASTA_PROFILE)
  return std::make_shared<pasta::Profiler<pasta::nv::Sanitizer, pasta::proc::GpuBucketing,
                                          pasta::tools::UvmHotness, pasta::tools::MemHotness>>();
#else
  return std::make_shared<
      pasta::Profiler<pasta::nv::Sanitizer, pasta::proc::Cpu, pasta::tools::UvmHotness>>();
#endif
}
