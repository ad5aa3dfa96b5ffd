// Injection pipelines for bench/gpu/overhead.py: KernelFreq alone, and
// KernelFreq + Timeline (the pair the overhead goal is set for).
#include <pasta/nv/cupti.hpp>
#include <pasta/nv/inject.hpp>
#include <pasta/pasta.hpp>
#include <pasta/tools/timeline.hpp>

#if defined(PASTA_BENCH_KERNEL_FREQ)
using BenchProfiler = pasta::Profiler<pasta::nv::Cupti, pasta::proc::Cpu, pasta::tools::KernelFreq>;
#else
using BenchProfiler = pasta::Profiler<pasta::nv::Cupti, pasta::proc::Cpu, pasta::tools::KernelFreq,
                                      pasta::tools::Timeline>;
#endif

PASTA_INJECT(BenchProfiler)
