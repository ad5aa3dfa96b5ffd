// counters_pasta's profiler, which counters.cu keeps for the whole of main (../profiler.hpp).
#include <pasta/nv/cupti.hpp>
#include <pasta/pasta.hpp>
#include <pasta/tools/op_counters.hpp>

#include "../profiler.hpp"

std::shared_ptr<void> make_profiler() {
  return std::make_shared<
      pasta::Profiler<pasta::nv::Cupti, pasta::proc::Cpu, pasta::tools::OpCounters>>();
}
