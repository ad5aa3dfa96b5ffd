// A program built against pasta's compiled part (PASTA_COMPILED): its
// translation units declare the non-template code, pasta::runtime or
// implement.cpp defines it. Profiles three launches and a scope, and checks
// the reports it wrote, the JSON ones included.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <pasta/pasta.hpp>

#ifndef PASTA_COMPILED
#error "this file is compiled with PASTA_COMPILED"
#endif

// In scopes.cpp, which includes the client header alone.
void scoped_step();

namespace {
std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

int main(int argc, char** argv) {
  pasta::Config cfg;
  cfg.output_dir = argc > 1 ? argv[1] : "compiled-out";
  cfg.print = pasta::PrintTo::none;
  cfg.read_env = false;
  std::size_t files = 0;
  {
    pasta::Profiler<pasta::Direct, pasta::proc::Cpu, pasta::tools::KernelFreq,
                    pasta::tools::ScopeTime>
        prof(cfg);
    const pasta::NameId k = pasta::intern("compiled_kernel");
    for (std::uint64_t i = 1; i <= 3; ++i) {
      prof.emit(pasta::KernelLaunch{.correlation = i, .name = k});
      prof.emit(pasta::KernelComplete{.correlation = i, .start_ns = 10 * i, .end_ns = 10 * i + 5});
      scoped_step();
    }
    prof.stop();
    files = prof.files().size();
  }
  const std::string json = read(cfg.output_dir + "/kernel_freq.json");
  const std::string scopes = read(cfg.output_dir + "/scope_time.txt");
  const bool launches = json.find("\"launches\": 3") != std::string::npos;
  const bool step = scopes.find("step") != std::string::npos;
  std::printf("compiled: %zu report files, kernel_freq.json %s, scope_time.txt %s\n", files,
              launches ? "counts 3 launches" : "WRONG", step ? "has the step scope" : "WRONG");
  return launches && step ? 0 : 1;
}
