// The pipeline `pasta run` injects by default: launches and device time per
// kernel, a Perfetto timeline, time per NVTX range, and event counts.
// With PASTA_COUNTERS (libpasta_counters.so, `pasta run --counters`):
// hardware counters per kernel (OpCounters; CUPTI's Range Profiler under
// kernel replay) and launches per kernel.
#include <pasta/nv/cupti.hpp>
#include <pasta/nv/inject.hpp>
#include <pasta/pasta.hpp>
#include <pasta/tools/timeline.hpp>

#if defined(PASTA_COUNTERS)
#include <pasta/tools/op_counters.hpp>
using DefaultProfiler = pasta::Profiler<pasta::nv::Cupti, pasta::proc::Cpu,
                                        pasta::tools::OpCounters, pasta::tools::KernelFreq>;
#else
using DefaultProfiler =
    pasta::Profiler<pasta::nv::Cupti, pasta::proc::Cpu, pasta::tools::KernelFreq,
                    pasta::tools::Timeline, pasta::tools::ScopeTime, pasta::tools::EventCount>;
#endif

PASTA_INJECT(DefaultProfiler)
