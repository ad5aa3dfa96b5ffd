// A pipeline library for the optimizer-step test on the CPU
// (tests/torch/steps_check.py): torch::Steps, with no other handler and no
// PyTorch linked, as in `pasta run --capture-range steps:A-B` without
// --torch. Python loads it and calls InitializeInjection, as CUDA's start
// does on a GPU; the program marks its steps with pasta scopes (probe_scope),
// and ScopeTime's report shows which of them fell inside the window.
#include <pasta/nv/inject.hpp>
#include <pasta/pasta.hpp>
#include <pasta/tools/scope_time.hpp>
#include <pasta/torch/steps.hpp>

using Pipeline = pasta::Profiler<pasta::torch::Steps, pasta::proc::Cpu, pasta::tools::ScopeTime>;

PASTA_INJECT(Pipeline)

// begin != 0: enter a scope named `name` on this thread; else leave the innermost one.
extern "C" __attribute__((visibility("default"))) void probe_scope(const char* name, int begin) {
  if (begin)
    pasta::start(name);
  else
    pasta::end();
}
