// expect: nv::Cupti and nv::Sanitizer cannot share a process
// Two handlers that each subscribe to CUDA's tools interface, as nv::Cupti
// and nv::Sanitizer do (stand-ins, so this test needs no CUDA headers).
#include <pasta/pasta.hpp>

template <int I>
struct CudaTool {
  static constexpr std::string_view name = "cuda tool";
  static constexpr std::string_view cuda_tools_subscriber = "stand-in";
  template <class Sink>
  void start(Sink&) {}
  void stop() {}
  void flush() {}
};

pasta::Profiler<pasta::Handlers<CudaTool<0>, CudaTool<1>>, pasta::proc::Cpu,
                pasta::tools::KernelFreq>
    prof;
