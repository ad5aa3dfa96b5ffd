// expect: this Tool needs `static constexpr std::string_view name`
#include <pasta/pasta.hpp>

struct NamelessTool {
  void on(const pasta::KernelLaunch&) {}
  void report(pasta::Report&) const {}
};

pasta::Profiler<pasta::Direct, pasta::proc::Cpu, NamelessTool> prof;
