// The rocprofiler-sdk tool library, the AMD twin of default.cpp: launches
// and device time per kernel, a Perfetto timeline, time per ROCTx range, and
// event counts, for an unmodified HIP program:
//
//   ROCP_TOOL_LIBRARIES=/path/libpasta_rocprofiler_tool.so ./program
#include <pasta/amd/inject.hpp>
#include <pasta/amd/rocprofiler.hpp>
#include <pasta/pasta.hpp>
#include <pasta/tools/timeline.hpp>

using RocprofilerProfiler =
    pasta::Profiler<pasta::amd::Rocprofiler, pasta::proc::Cpu, pasta::tools::KernelFreq,
                    pasta::tools::Timeline, pasta::tools::ScopeTime, pasta::tools::EventCount>;

PASTA_ROCPROFILER_TOOL(RocprofilerProfiler)
