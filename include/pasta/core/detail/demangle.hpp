// Readable kernel names: Itanium-ABI demangling through the C++ runtime.
#pragma once

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

namespace pasta::detail {

// The demangled form of `mangled`, or `mangled` itself when it is not a
// mangled name (C kernels, names already demangled by the driver).
inline std::string demangle(std::string_view mangled) {
  if (mangled.size() < 2 || mangled[0] != '_' || mangled[1] != 'Z') return std::string(mangled);
  const std::string copy(mangled);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(copy.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : copy;
}

}  // namespace pasta::detail
