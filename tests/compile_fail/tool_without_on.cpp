// expect: this Tool has no on\(const Event&\) overload for any event in pasta::all_events
#include <pasta/pasta.hpp>

struct NoOnTool {
  static constexpr std::string_view name = "no_on";
  void handle(const pasta::KernelLaunch&) {}  // not called on()
  void report(pasta::Report&) const {}
};

pasta::Profiler<pasta::Direct, pasta::proc::Cpu, NoOnTool> prof;
