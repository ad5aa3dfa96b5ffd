// A cubin's bytes, as the tests of the cubin readers take them.
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace pasta::test {

inline std::vector<std::byte> read_cubin(const char* path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
  std::vector<std::byte> out(bytes.size());
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace pasta::test
