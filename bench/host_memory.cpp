// Host memory of a long run: 1e6 kernel launches (launch + completion, 200
// distinct kernels on 8 streams, an NVTX-style scope every 1000 launches)
// through KernelFreq + Timeline on proc::Cpu, the default `pasta run`
// pipeline's aggregation. Prints resident memory (VmRSS) before, every
// 1e5 launches, and after, and the growth; writes the timeline to a temp
// directory. A benchmark, not a test: it measures and never fails.
//   pasta_bench_host_memory [launches]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <pasta/pasta.hpp>
#include <pasta/tools/timeline.hpp>

namespace {
long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}
}  // namespace

int main(int argc, char** argv) {
  const long launches = argc > 1 ? std::atol(argv[1]) : 1'000'000;
  char dir[] = "/tmp/pasta-host-memory-XXXXXX";
  if (!::mkdtemp(dir)) return 1;
  pasta::Config cfg;
  cfg.output_dir = dir;
  cfg.print = pasta::PrintTo::none;
  cfg.read_env = false;
  std::vector<pasta::NameId> kernels;
  for (int k = 0; k < 200; ++k) kernels.push_back(pasta::intern("kernel_" + std::to_string(k)));
  const pasta::NameId scope = pasta::intern("step");
  const long before = rss_kib();
  long peak = before;
  {
    pasta::Profiler<pasta::Direct, pasta::proc::Cpu, pasta::tools::KernelFreq,
                    pasta::tools::Timeline>
        prof(cfg);
    std::uint64_t t = 1'000'000;
    std::printf("| launches | VmRSS (MiB) | growth (MiB) |\n|---:|---:|---:|\n");
    std::printf("| 0 | %.1f | 0.0 |\n", before / 1024.0);
    for (long i = 0; i < launches; ++i) {
      const auto c = static_cast<std::uint64_t>(i + 1);
      const pasta::NameId name = kernels[static_cast<std::size_t>(i % 200)];
      if (i % 1000 == 0) prof.emit(pasta::ScopeBegin{.name = scope, .thread = 1, .time_ns = t});
      prof.emit(pasta::KernelLaunch{.correlation = c, .stream = c % 8, .name = name,
                                    .thread = 1, .time_ns = t});
      prof.emit(pasta::KernelComplete{.correlation = c, .stream = c % 8, .name = name,
                                      .start_ns = t + 100, .end_ns = t + 900});
      if (i % 1000 == 999) prof.emit(pasta::ScopeEnd{.name = scope, .thread = 1, .time_ns = t + 950});
      t += 1000;
      if ((i + 1) % 100'000 == 0) {
        const long now = rss_kib();
        peak = now > peak ? now : peak;
        std::printf("| %ld | %.1f | %.1f |\n", i + 1, now / 1024.0, (now - before) / 1024.0);
      }
    }
    prof.stop();
  }
  std::ifstream timeline(std::string(dir) + "/timeline.trace.json", std::ios::ate);
  std::printf("\n%ld launches through KernelFreq + Timeline (proc::Cpu): VmRSS grew %.1f MiB at "
              "most (goal < 50 MB); the timeline streamed %.1f MiB to disk\n",
              launches, (peak - before) / 1024.0,
              static_cast<double>(timeline.tellg()) / 1048576.0);
  std::system((std::string("rm -rf ") + dir).c_str());
  return 0;
}
