// expect: a tool is named twice in one Profiler
#include <pasta/pasta.hpp>

pasta::Profiler<pasta::Direct, pasta::proc::Cpu, pasta::tools::KernelFreq, pasta::tools::KernelFreq>
    prof;
