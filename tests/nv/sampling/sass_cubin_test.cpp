// The stall-blame example's kernel as nvcc builds it: its code found in the
// cubin and, where nvdisasm is (PASTA_NVDISASM, PATH, the CUDA toolkit; CI
// installs PyPI's nvidia-cuda-nvdisasm), disassembled and read for the loads
// each stalled instruction waits for.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <pasta/nv/detail/cubin.hpp>
#include <pasta/nv/sampling/nvdisasm.hpp>
#include <pasta/nv/sampling/sass.hpp>

#include "../cubin_file.hpp"

namespace sass = pasta::nv::detail::sass;

namespace {

using pasta::test::read_cubin;

std::vector<std::byte> blend_code(const std::vector<std::byte>& image) {
  std::vector<std::byte> blend;
  REQUIRE(pasta::nv::detail::for_each_kernel_code(
      image, [&](std::string_view name, std::span<const std::byte> code) {
        if (name == "_Z5blendPKfjS0_jPfj") blend.assign(code.begin(), code.end());
      }));
  return blend;
}

}  // namespace

TEST_CASE("sass: the blend kernel's code in its cubin") {
  const auto image = read_cubin(PASTA_TEST_STALLS_CUBIN);
  CHECK(pasta::nv::detail::sm_of(image) == 90);
  const auto blend = blend_code(image);
  CHECK(blend.size() % 16 == 0);
  CHECK(blend.size() > 0);
}

// Built where CMake found nvdisasm (a build that did not says so when configured, and
// PASTA_REQUIRE_TEST_DEPS makes that an error); found then and missing now is a failure.
#ifdef PASTA_TEST_NVDISASM
TEST_CASE("sass: the blend kernel's code in its cubin, disassembled by nvdisasm") {
  const auto blend = blend_code(read_cubin(PASTA_TEST_STALLS_CUBIN));
  REQUIRE(blend.size() % 16 == 0);
  REQUIRE(blend.size() > 0);
  const char* env = std::getenv("PASTA_NVDISASM");
  const std::string nvdisasm = sass::find_nvdisasm(env ? env : PASTA_TEST_NVDISASM);
  REQUIRE_MESSAGE(!nvdisasm.empty(), "no nvdisasm at " << (env ? env : PASTA_TEST_NVDISASM));
  std::string why;
  const auto code = sass::disassemble(blend, 90, nvdisasm, why);
  CHECK(why.empty());
  REQUIRE(code.size() == blend.size() / 16);
  // Every long-scoreboard wait in the loop is on loads (see blend.sm90.txt
  // for the same code); the sum of cold[] waits for exactly one.
  std::size_t waits = 0;
  for (const auto& i : code) {
    const auto p = sass::producers(code, i.pc);
    for (std::uint64_t load : p.all) {
      bool is_load = false;
      for (const auto& j : code)
        if (j.pc == load) is_load = sass::is_long_load(j.opcode);
      CHECK(is_load);
    }
    waits += !p.all.empty();
  }
  CHECK(waits >= 4);
  std::string empty_why;
  CHECK(sass::disassemble(blend, 90, "/nonexistent/nvdisasm", empty_why).empty());
  CHECK(empty_why.find("failed") != std::string::npos);
}

TEST_CASE("sass: the access run's unseen loads are the TMA tensor copies, kernel by kernel") {
  const char* env = std::getenv("PASTA_NVDISASM");
  const std::string nvdisasm = sass::find_nvdisasm(env ? env : PASTA_TEST_NVDISASM);
  REQUIRE(!nvdisasm.empty());
  std::map<std::string, std::size_t> unseen;
  REQUIRE(pasta::nv::detail::for_each_kernel_code(
      read_cubin(PASTA_TEST_ASYNC_CUBIN),
      [&](std::string_view name, std::span<const std::byte> code) {
        std::string why;
        const auto ins = sass::disassemble(code, 90, nvdisasm, why);
        CHECK(why.empty());
        for (const char* k : {"staged_sum", "bulk_sum", "tensor_sum"})
          if (name.find(k) != std::string_view::npos)
            unseen[k] = pasta::nv::detail::Nvdisasm::unseen_loads(ins);
      }));
  // cp.async (LDGSTS) and cp.async.bulk (UBLKCP) have patches; the TMA copy (UTMALDG) has none.
  CHECK(unseen ==
        std::map<std::string, std::size_t>{{"bulk_sum", 0}, {"staged_sum", 0}, {"tensor_sum", 1}});
}
#endif
