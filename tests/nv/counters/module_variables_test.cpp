// The `__device__` variables user replay saves with the allocations: named
// by the test cubin's symbol table (tests/data/cubin/kernels.cu), found in a
// fake driver's module or library.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <pasta/nv/counters/module_variables.hpp>

#include "../cubin_file.hpp"

using pasta::nv::detail::Driver;
using pasta::nv::detail::ModuleVariables;
using Range = pasta::nv::detail::Allocations::Range;
using pasta::nv::detail::Variable;

namespace module_variables_test {

std::vector<std::byte> test_cubin() { return pasta::test::read_cubin(PASTA_TEST_CUBIN); }

// A driver whose kernels are the test cubin's: handle 0x10 a function of
// module 0x100, handle 0x20 a CUkernel of library 0x200 (cuFuncLoad refuses
// it); the variables at addresses of their own, `table` missing from the library.
struct VariablesFake {
  std::map<std::string, Range> in_module{{"_ZN6counts5callsE", {0x7000, 4}}, {"table", {0x7100, 16}}};
  std::map<std::string, Range> in_library{{"_ZN6counts5callsE", {0x9000, 4}}};
  int lookups = 0;
  bool library_api = true;
  // cuModuleGetGlobal or cuLibraryGetGlobal on `in`, counted.
  CUresult look_up(const std::map<std::string, Range>& in, const char* name, CUdeviceptr* base,
                   std::size_t* bytes) {
    ++lookups;
    const auto it = in.find(name);
    if (it == in.end()) return CUDA_ERROR_NOT_FOUND;
    *base = it->second.base;
    *bytes = it->second.bytes;
    return CUDA_SUCCESS;
  }
};
VariablesFake vf;

Driver variables_driver() {
  vf = VariablesFake{};
  Driver d;
  d.function_load = [](CUfunction f) {
    return f == reinterpret_cast<CUfunction>(0x20) ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
  };
  d.function_name = [](const char** name, CUfunction f) {
    *name = f == reinterpret_cast<CUfunction>(0x10) ? "_Z9scale_allPf" : "_Z5otherv";
    return CUDA_SUCCESS;
  };
  d.kernel_name = [](const char** name, CUkernel) {
    *name = "_Z7set_oneIiEvPT_";
    return CUDA_SUCCESS;
  };
  d.function_module = [](CUmodule* m, CUfunction) {
    *m = reinterpret_cast<CUmodule>(0x100);
    return CUDA_SUCCESS;
  };
  d.module_global = [](CUdeviceptr* base, std::size_t* bytes, CUmodule, const char* name) {
    return vf.look_up(vf.in_module, name, base, bytes);
  };
  d.kernel_library = [](CUlibrary* l, CUkernel) {
    if (!vf.library_api) return CUDA_ERROR_NOT_SUPPORTED;
    *l = reinterpret_cast<CUlibrary>(0x200);
    return CUDA_SUCCESS;
  };
  d.library_global = [](CUdeviceptr* base, std::size_t* bytes, CUlibrary, const char* name) {
    return vf.look_up(vf.in_library, name, base, bytes);
  };
  d.kernel_function = [](CUfunction* f, CUkernel) {
    *f = reinterpret_cast<CUfunction>(0x21);
    return CUDA_SUCCESS;
  };
  return d;
}

const auto function = reinterpret_cast<CUfunction>(0x10);
const auto kernel = reinterpret_cast<CUfunction>(0x20);
const auto other = reinterpret_cast<CUfunction>(0x30);

}  // namespace module_variables_test

using module_variables_test::function;
using module_variables_test::kernel;
using module_variables_test::other;
using module_variables_test::test_cubin;
using module_variables_test::variables_driver;
using module_variables_test::vf;

TEST_CASE("ModuleVariables: a kernel's variables found in its module, once per handle") {
  Driver driver = variables_driver();
  ModuleVariables variables;
  CHECK(variables.of(driver, function).empty());  // no image seen yet: nothing to look up
  CHECK(vf.lookups == 0);
  variables.forget();
  variables.loaded(test_cubin());
  const std::vector<Variable> both{{0x7000, 4}, {0x7100, 16}};
  auto found = variables.of(driver, function);
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.base < b.base; });
  CHECK(found == both);
  CHECK(vf.lookups == 2);
  CHECK(variables.of(driver, function).size() == 2);
  CHECK(vf.lookups == 2);  // cached
  // A kernel no image with variables names: none, nothing looked up.
  CHECK(variables.of(driver, other).empty());
  CHECK(vf.lookups == 2);
  CHECK(variables.missed() == 0);
  // After a module unloads, looked up again.
  variables.forget();
  CHECK(variables.of(driver, function).size() == 2);
  CHECK(vf.lookups == 4);
}

TEST_CASE("ModuleVariables: each variable with the driver allocation that holds it") {
  Driver driver = variables_driver();
  driver.address_range = [](CUdeviceptr* base, std::size_t* bytes, CUdeviceptr at) {
    if (at == 0x7100) return CUDA_ERROR_NOT_FOUND;  // the driver would not say: none
    *base = at & ~CUdeviceptr{0xfff};
    *bytes = 0x1000;
    return CUDA_SUCCESS;
  };
  ModuleVariables variables;
  variables.loaded(test_cubin());
  auto found = variables.of(driver, function);
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.base < b.base; });
  CHECK(found == std::vector<Variable>{{0x7000, 4, 0x7000}, {0x7100, 16, 0}});
}

TEST_CASE("ModuleVariables: a CUkernel's in its library, else in its function's module") {
  Driver driver = variables_driver();
  ModuleVariables variables;
  variables.loaded(test_cubin());
  // `table` is not in the library: the function's module has it.
  auto found = variables.of(driver, kernel);
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.base < b.base; });
  CHECK(found == std::vector<Variable>{{0x7100, 16}, {0x9000, 4}});
  CHECK(variables.missed() == 0);
  // Without cuKernelGetLibrary: all through the function.
  variables.forget();
  vf.library_api = false;
  found = variables.of(driver, kernel);
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.base < b.base; });
  CHECK(found == std::vector<Variable>{{0x7000, 4}, {0x7100, 16}});
  // A variable the driver does not find is counted.
  variables.forget();
  vf.in_module.erase("table");
  CHECK(variables.of(driver, kernel) == std::vector<Variable>{{0x7000, 4}});
  CHECK(variables.missed() == 1);
  // A driver without the lookups finds none, and says so.
  Driver bare;
  ModuleVariables none;
  none.loaded(test_cubin());
  bare.function_name = driver.function_name;
  CHECK(none.of(bare, function).empty());
  CHECK(none.missed() == 2);
}

TEST_CASE("ModuleVariables: a lazily loaded module is loaded first, its image taken on the same thread") {
  // The CUkernel's function in the context loads its module when cuFuncLoad
  // asks: the image comes to loaded() then, from inside the lookup (as
  // CUPTI's callback does), before the names are read.
  static ModuleVariables* lazy = nullptr;
  static std::vector<std::byte> image;
  image = test_cubin();
  Driver driver = variables_driver();
  driver.function_load = [](CUfunction f) {
    if (f == kernel) return CUDA_ERROR_INVALID_HANDLE;
    if (f == reinterpret_cast<CUfunction>(0x21) && lazy) lazy->loaded(image);
    return CUDA_SUCCESS;
  };
  ModuleVariables variables;
  lazy = &variables;
  auto found = variables.of(driver, kernel);
  lazy = nullptr;
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.base < b.base; });
  CHECK(found == std::vector<Variable>{{0x7100, 16}, {0x9000, 4}});
}

TEST_CASE("ModuleVariables: an image without variables, or not an ELF, adds nothing") {
  Driver driver = variables_driver();
  ModuleVariables variables;
  std::vector<std::byte> text(256, std::byte{'x'});
  variables.loaded(text);
  CHECK(variables.of(driver, function).empty());
  CHECK(vf.lookups == 0);
}
