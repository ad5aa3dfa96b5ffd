// The tool of gpu_idle.hpp on a recorded trace: docs/writing-a-tool.md builds
// and runs it; a test replays a trace recorded on an H100 through it.
#include <pasta/pasta.hpp>
#include <pasta/trace.hpp>

#include <cstdio>

#include "gpu_idle.hpp"

// 4. Compose it with a handler and a processor. Here the handler replays a
//    recorded trace (argv[1]); nv::Cupti in its place profiles a live program.
int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gpu_idle TRACE [DIR]\n");
    return 2;
  }
  pasta::Config cfg;
  cfg.trace_file = argv[1];
  cfg.output_dir = argc > 2 ? argv[2] : "gpu-idle-out";
  cfg.print = pasta::PrintTo::stdout_;
  pasta::Profiler<pasta::Replay, pasta::proc::Cpu, pasta::tools::GpuIdle> profiler(cfg);
  return profiler.handler().complete() ? 0 : 1;
}  // 5. The profiler writes the report when it goes out of scope.
