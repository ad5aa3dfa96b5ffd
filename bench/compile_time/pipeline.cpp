// A translation unit that includes pasta.hpp and instantiates the
// four-tool pipeline of bench/dispatch, reports included.
#include <pasta/pasta.hpp>

using Prof =
    pasta::Profiler<pasta::Direct, pasta::proc::PassThrough, pasta::tools::KernelFreq,
                    pasta::tools::MemHotness, pasta::tools::EventCount, pasta::tools::ScopeTime>;

int main() {
  Prof prof;
  PASTA_SCOPE("main");
  prof.emit(pasta::KernelLaunch{.correlation = 1});
  prof.emit(pasta::KernelComplete{.correlation = 1});
  prof.emit(pasta::MemAlloc{.address = 64, .bytes = 64});
  prof.emit(pasta::MemAccess{.address = 64, .alloc_base = 64, .bytes = 4});
  return 0;
}
