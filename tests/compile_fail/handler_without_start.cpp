// expect: this Handler needs `template <class Sink> void start\(Sink&\)`
#include <pasta/pasta.hpp>

struct NotAHandler {
  void stop() {}
  void flush() {}
};

pasta::Profiler<NotAHandler, pasta::proc::Cpu, pasta::tools::KernelFreq> prof;
