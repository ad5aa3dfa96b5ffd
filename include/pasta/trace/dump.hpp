// One line of text per event ("KernelLaunch correlation=7 name=vecAdd
// grid=(4,1,1) ..."), for `pasta-trace dump` and for test failure output.
#pragma once

#include <string>
#include <type_traits>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/reflect.hpp>
#include <pasta/core/events.hpp>

namespace pasta::trace {

namespace detail {
template <class T>
std::string value_text(const T& v) {
  if constexpr (std::is_same_v<T, NameId>)
    return fmt::format("\"{}\"", name_of(v));
  else if constexpr (std::is_same_v<T, Dim3>)
    return fmt::format("({},{},{})", v.x, v.y, v.z);
  else if constexpr (std::is_enum_v<T>)
    return std::string(to_string(v));
  else
    return fmt::format("{}", v);
}
}  // namespace detail

template <Event E>
std::string to_text(const E& e) {
  std::string out(E::type_name);
  pasta::detail::for_each_field(e, [&](std::string_view field, const auto& v) {
    out += fmt::format(" {}={}", field, detail::value_text(v));
  });
  return out;
}

}  // namespace pasta::trace
