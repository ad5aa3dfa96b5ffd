// Readable kernel names: Itanium-ABI demangling through the C++ runtime.
#pragma once

#include <cxxabi.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace pasta::detail {

// The demangled form of `mangled`, or `mangled` itself when it is not a
// mangled name (C kernels, names already demangled by the driver).
inline std::string demangle(std::string_view mangled) {
  if (mangled.size() < 2 || mangled[0] != '_' || mangled[1] != 'Z') return std::string(mangled);
  const std::string copy(mangled);
  int status = 0;
  struct Freed {  // __cxa_demangle's buffer, freed on every way out
    char* p;
    ~Freed() { std::free(p); }
  } out{abi::__cxa_demangle(copy.c_str(), nullptr, nullptr, &status)};
  return status == 0 && out.p ? std::string(out.p) : copy;
}

// A demangled kernel name without its parameter list and return type, for
// tables: "void gemm<float, 128>(float const*, int)" -> "gemm<float, 128>".
inline std::string short_kernel_name(std::string_view demangled) {
  std::string_view s = demangled;
  if (s.starts_with("void ")) s.remove_prefix(5);
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (std::size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')')
        ++depth;
      else if (s[i] == '(' && --depth == 0) {
        if (i > 0) s = s.substr(0, i);
        break;
      }
    }
  }
  return std::string(s);
}

}  // namespace pasta::detail
