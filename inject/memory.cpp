// The memory-access pipelines `pasta run --memory` injects: hotness per
// allocation and page (MemHotness) and launches per kernel (KernelFreq)
// through the Compute Sanitizer API. Built twice: with proc::GpuBucketing
// (libpasta_memory.so, reduced on the device) and, with PASTA_MEMORY_CPU,
// with proc::Cpu (libpasta_memory_cpu.so, every access reduced on the host).
#include <pasta/nv/inject.hpp>
#include <pasta/nv/sanitizer.hpp>
#include <pasta/pasta.hpp>

#ifdef PASTA_MEMORY_CPU
using Processor = pasta::proc::Cpu;
#else
using Processor = pasta::proc::GpuBucketing;
#endif

using MemoryProfiler = pasta::Profiler<pasta::nv::Sanitizer, Processor, pasta::tools::MemHotness,
                                       pasta::tools::KernelFreq>;

PASTA_INJECT(MemoryProfiler)
