// `pasta run --record`: every CUPTI event into a trace file (PASTA_TRACE, or
// <output dir>/trace.pasta) that pasta-trace and pasta::Replay read back.
#include <pasta/nv/cupti.hpp>
#include <pasta/nv/inject.hpp>
#include <pasta/pasta.hpp>
#include <pasta/trace.hpp>

using RecordProfiler = pasta::Profiler<pasta::nv::Cupti, pasta::proc::PassThrough,
                                       pasta::tools::Record, pasta::tools::EventCount>;

PASTA_INJECT(RecordProfiler)
