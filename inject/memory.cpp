// The memory-access pipelines `pasta run --memory` injects: hotness per
// allocation and page (MemHotness) and launches per kernel (KernelFreq)
// through the Compute Sanitizer API. Built twice: with proc::GpuBucketing
// (libpasta_memory.so, reduced on the device) and, with PASTA_MEMORY_CPU,
// with proc::Cpu (libpasta_memory_cpu.so, every access reduced on the host);
// and with PASTA_MEMORY_RECORD, a trace of the device histograms and every
// other event (libpasta_memory_record.so, `pasta run --memory --record`).
// With PASTA_STALL_ACCESS (libpasta_stall_access.so, run 2 of `pasta run -t
// stall_blame`): every access's pc and allocation, joined with run 1's
// stall samples (StallBlame).
#include <pasta/nv/inject.hpp>
#include <pasta/nv/sanitizer.hpp>
#include <pasta/pasta.hpp>
#include <pasta/tools/record.hpp>

#if defined(PASTA_STALL_ACCESS)
#include <pasta/tools/stall_blame.hpp>
using MemoryProfiler =
    pasta::Profiler<pasta::nv::Sanitizer, pasta::proc::Cpu, pasta::tools::StallBlame>;
#elif defined(PASTA_MEMORY_RECORD)
using MemoryProfiler =
    pasta::Profiler<pasta::nv::Sanitizer, pasta::proc::GpuBucketing, pasta::tools::Record>;
#else
#ifdef PASTA_MEMORY_CPU
using Processor = pasta::proc::Cpu;
#else
using Processor = pasta::proc::GpuBucketing;
#endif
using MemoryProfiler = pasta::Profiler<pasta::nv::Sanitizer, Processor, pasta::tools::MemHotness,
                                       pasta::tools::UvmHotness, pasta::tools::KernelFreq>;
#endif

PASTA_INJECT(MemoryProfiler)
