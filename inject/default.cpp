// The pipeline `pasta run` injects by default: launches and device time per
// kernel, a Perfetto timeline, time per NVTX range, and event counts.
#include <pasta/nv/cupti.hpp>
#include <pasta/nv/inject.hpp>
#include <pasta/pasta.hpp>
#include <pasta/tools/timeline.hpp>

using DefaultProfiler =
    pasta::Profiler<pasta::nv::Cupti, pasta::proc::Cpu, pasta::tools::KernelFreq,
                    pasta::tools::Timeline, pasta::tools::ScopeTime, pasta::tools::EventCount>;

PASTA_INJECT(DefaultProfiler)
