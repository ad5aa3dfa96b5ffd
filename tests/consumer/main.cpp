// Composes a pipeline, records a few events, replays them through another
// pipeline and checks the counts: the library works from an install, header-only
// (consumer) and against pasta::runtime (consumer_compiled).
#include <cstdio>
#include <string>

#include <pasta/pasta.hpp>
#include <pasta/trace.hpp>

int main(int argc, char** argv) {
  pasta::Config cfg;
  cfg.output_dir = argc > 1 ? argv[1] : "consumer-out";
  cfg.trace_file = cfg.output_dir + "/consumer.pasta";
  cfg.print = pasta::PrintTo::none;
  {
    pasta::Profiler<pasta::Direct, pasta::proc::Cpu, pasta::tools::Record> rec(cfg);
    const pasta::NameId k = pasta::intern("consumer_kernel");
    for (std::uint64_t i = 1; i <= 3; ++i) {
      rec.emit(pasta::KernelLaunch{.correlation = i, .name = k});
      rec.emit(pasta::KernelComplete{.correlation = i, .start_ns = 10 * i, .end_ns = 10 * i + 5});
    }
  }
  pasta::Profiler<pasta::Replay, pasta::proc::Cpu, pasta::tools::KernelFreq> replay(cfg);
  const auto* s = replay.tool<pasta::tools::KernelFreq>().stats("consumer_kernel");
  const bool ok = s && s->calls() == 3 && s->total_ns == 15;
  std::printf("pasta %s consumer: %s\n", PASTA_VERSION_STRING, ok ? "ok" : "WRONG COUNTS");
  return ok ? 0 : 1;
}
