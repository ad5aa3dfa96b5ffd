// A process of a job, for tests/cli/job_test.py: an in-binary profiler (no
// GPU) that sees N kernel launches of `kind` at known times, as a CUDA
// handler would report them (and records them to trace.pasta), then exits. N = 0: a process that does no GPU
// work (torchrun's own process, a launcher script).
//   pasta_job_child N [KIND] [SECONDS_TO_SLEEP]
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <pasta/pasta.hpp>
#include <pasta/trace/record.hpp>
#include <pasta/tools/timeline.hpp>

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 0;
  const std::string kind = argc > 2 ? argv[2] : "gemm";
  pasta::Config cfg;
  cfg.print = pasta::PrintTo::none;
  pasta::Profiler<pasta::Direct, pasta::proc::Cpu, pasta::tools::KernelFreq,
                  pasta::tools::Timeline, pasta::tools::Record>
      prof(cfg);
  const pasta::NameId name = pasta::intern(kind);
  const pasta::NameId nccl = pasta::intern("ncclDevKernel_AllReduce");
  // Kernel i runs from 1000 + 100 i us for 50 us (times in ns); each rank
  // also runs one all-reduce of 10 us.
  for (int i = 0; i < n; ++i) {
    const std::uint64_t start = 1'000'000 + 100'000ull * i;
    prof.emit(pasta::KernelLaunch{.correlation = std::uint64_t(i) + 1, .name = name});
    prof.emit(pasta::KernelComplete{.correlation = std::uint64_t(i) + 1, .name = name,
                                    .start_ns = start, .end_ns = start + 50'000});
  }
  if (n > 0) {
    const std::uint64_t start = 1'000'000 + 100'000ull * n;
    prof.emit(pasta::KernelLaunch{.correlation = 1000, .name = nccl});
    prof.emit(pasta::KernelComplete{.correlation = 1000, .name = nccl, .start_ns = start,
                                    .end_ns = start + 10'000});
  }
  if (argc > 3) std::this_thread::sleep_for(std::chrono::seconds(std::atoi(argv[3])));
  return 0;
}
