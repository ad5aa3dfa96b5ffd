// A program that profiles three kernel launches and then ends in the way
// its argument names, for tests/core/exit_paths_test.py:
//   return | exit | throw | abort | sigint | sigterm | kill
// `kill` records 50000 launches to PASTA_TRACE with tools::Record, then
// SIGKILLs itself mid-run.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <pasta/pasta.hpp>
#include <pasta/trace/record.hpp>

using Prof = pasta::Profiler<pasta::Direct, pasta::proc::Cpu, pasta::tools::KernelFreq>;
using Recorder = pasta::Profiler<pasta::Direct, pasta::proc::PassThrough, pasta::tools::Record>;

template <class P>
void launch(P& prof, std::uint64_t n) {
  const pasta::NameId k = pasta::intern("_Z6kernelPf");
  for (std::uint64_t c = 1; c <= n; ++c) {
    prof.emit(pasta::KernelLaunch{.correlation = c, .name = k, .time_ns = c * 10});
    prof.emit(pasta::KernelComplete{.correlation = c, .name = k, .start_ns = c * 10,
                                    .end_ns = c * 10 + 5});
  }
}

int main(int argc, char** argv) {
  const std::string how = argc > 1 ? argv[1] : "return";
  if (how == "kill") {
    Recorder rec;
    launch(rec, 50000);
    ::kill(::getpid(), SIGKILL);
  }
  Prof prof;
  launch(prof, 3);
  std::fflush(stdout);
  if (how == "exit") std::exit(3);
  if (how == "throw") throw std::runtime_error("out of cheese");
  if (how == "abort") std::abort();
  if (how == "sigint") ::raise(SIGINT);
  if (how == "sigterm") ::raise(SIGTERM);
  return 0;
}
