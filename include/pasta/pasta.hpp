// pasta: compose a GPU profiler at compile time from a handler, a processor
// and tools. This umbrella header brings in the pipeline, the processors and
// the analysis tools; pasta/trace.hpp adds recording and replaying traces,
// and the vendor handlers live under pasta/nv, pasta/amd and pasta/torch.
#pragma once

#include <pasta/core/config.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/handlers.hpp>
#include <pasta/core/profiler.hpp>
#include <pasta/core/scope.hpp>
#include <pasta/core/version.hpp>
#include <pasta/proc/cpu.hpp>
#include <pasta/proc/gpu_bucketing.hpp>
#include <pasta/proc/pass_through.hpp>
#include <pasta/tools/event_count.hpp>
#include <pasta/tools/kernel_freq.hpp>
#include <pasta/tools/mem_hotness.hpp>
#include <pasta/tools/module_summary.hpp>
#include <pasta/tools/op_counters.hpp>
#include <pasta/tools/op_summary.hpp>
#include <pasta/tools/scope_time.hpp>
#include <pasta/tools/tensor_alloc.hpp>
#include <pasta/tools/tensor_hotness.hpp>
#include <pasta/tools/timeline.hpp>
#include <pasta/tools/uvm_hotness.hpp>
#include <pasta/variables.hpp>
