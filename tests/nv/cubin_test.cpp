#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <pasta/nv/detail/cubin.hpp>

#include "cubin_file.hpp"

namespace {

std::vector<std::byte> read_cubin() { return pasta::test::read_cubin(PASTA_TEST_CUBIN); }

std::set<std::string> kernels(std::span<const std::byte> image, bool& ok) {
  std::set<std::string> names;
  ok = pasta::nv::detail::for_each_kernel(image, [&](std::string_view n) { names.emplace(n); });
  return names;
}

}  // namespace

TEST_CASE("cubin: the kernels of an nvcc-built cubin, and not its device functions") {
  const auto image = read_cubin();
  bool ok = false;
  CHECK(kernels(image, ok) == std::set<std::string>{"_Z9scale_allPf", "_Z7set_oneIiEvPT_"});
  CHECK(ok);
}

TEST_CASE("cubin: the variables kernels may write, by the names cuModuleGetGlobal takes") {
  const auto image = read_cubin();
  std::set<std::string> names;
  CHECK(pasta::nv::detail::for_each_device_variable(
      image, [&](std::string_view n) { names.emplace(n); }));
  // Not the __constant__ `factor`, nor the kernels and the device function.
  CHECK(names == std::set<std::string>{"_ZN6counts5callsE", "table"});
}

TEST_CASE("cubin: a cut-short or foreign image gives false and never reads past its end") {
  const auto image = read_cubin();
  Elf64_Ehdr eh;
  std::memcpy(&eh, image.data(), sizeof eh);
  bool ok = true;
  // Each cut in a buffer of its own size, so a sanitizer build sees any overread.
  for (std::size_t n : {std::size_t{0}, std::size_t{4}, std::size_t{63},
                        static_cast<std::size_t>(eh.e_shoff) + 10}) {
    CAPTURE(n);
    const std::vector<std::byte> cut(image.begin(), image.begin() + static_cast<long>(n));
    CHECK(kernels(cut, ok).empty());
    CHECK_FALSE(ok);
  }
  std::vector<std::byte> text(256, std::byte{'x'});
  CHECK(kernels(text, ok).empty());
  CHECK_FALSE(ok);
}
