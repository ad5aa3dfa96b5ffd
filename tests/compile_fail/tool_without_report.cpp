// expect: this Tool needs `void report\(pasta::Report&\) const`
#include <pasta/pasta.hpp>

struct NoReportTool {
  static constexpr std::string_view name = "no_report";
  void on(const pasta::KernelLaunch&) {}
};

pasta::Profiler<pasta::Direct, pasta::proc::Cpu, NoReportTool> prof;
