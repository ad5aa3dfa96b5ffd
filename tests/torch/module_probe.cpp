// A pipeline library for the module and source-line test on the CPU
// (tests/torch/modules_check.py): Python loads it after importing torch and
// calls InitializeInjection, as `pasta run --torch --record` starts at CUDA's
// start on a GPU. It records every event to a trace and writes the module table.
#include <pasta/nv/inject.hpp>
#include <pasta/pasta.hpp>
#include <pasta/proc/pass_through.hpp>
#include <pasta/tools/module_summary.hpp>
#include <pasta/trace/record.hpp>
#include <pasta/torch/aten.hpp>

using Pipeline = pasta::Profiler<pasta::torch::Aten, pasta::proc::PassThrough,
                                 pasta::tools::Record, pasta::tools::ModuleSummary>;

PASTA_INJECT(Pipeline)
