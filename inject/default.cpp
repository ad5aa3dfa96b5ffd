// The pipeline `pasta run` injects by default: launches and device time per
// kernel, a Perfetto timeline, time per NVTX range, and event counts.
// With PASTA_COUNTERS (libpasta_counters.so, `pasta run --counters`):
// hardware counters per kernel (OpCounters; CUPTI's Range Profiler under
// kernel replay) and launches per kernel. With PASTA_STALL_SAMPLE
// (libpasta_stall_sample.so, run 1 of `pasta run -t stall_blame`): warp
// stall samples per instruction (StallBlame; CUPTI PC sampling).
#include <pasta/nv/cupti.hpp>
#include <pasta/nv/inject.hpp>
#include <pasta/pasta.hpp>
#include <pasta/tools/timeline.hpp>

#if defined(PASTA_STALL_SAMPLE)
#include <pasta/tools/stall_blame.hpp>
using DefaultProfiler = pasta::Profiler<pasta::nv::Cupti, pasta::proc::Cpu,
                                        pasta::tools::StallBlame, pasta::tools::KernelFreq>;
#elif defined(PASTA_COUNTERS)
#include <pasta/tools/op_counters.hpp>
using DefaultProfiler = pasta::Profiler<pasta::nv::Cupti, pasta::proc::Cpu,
                                        pasta::tools::OpCounters, pasta::tools::KernelFreq>;
#else
using DefaultProfiler =
    pasta::Profiler<pasta::nv::Cupti, pasta::proc::Cpu, pasta::tools::KernelFreq,
                    pasta::tools::Timeline, pasta::tools::ScopeTime, pasta::tools::EventCount>;
#endif

PASTA_INJECT(DefaultProfiler)
