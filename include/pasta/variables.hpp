// Every PASTA_* variable, one table per part: pasta's own (core/config.hpp)
// and each handler's, from its settings header. What reads them all: the
// docs check and the fuzzer.
// A profiler applies only its own handlers' (ConfigFor); including this header
// also tells the unknown-variable warning every handler's names.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include <pasta/core/config.hpp>
#include <pasta/core/type_list.hpp>
#include <pasta/device/settings.hpp>
#include <pasta/nv/cupti/settings.hpp>
#include <pasta/nv/sanitizer/settings.hpp>
#include <pasta/torch/settings.hpp>

namespace pasta {

// The settings every handler brings, and a Config that holds them all.
using HandlerSettings =
    TypeList<nv::CuptiSettings, nv::SanitizerSettings, device::AnnotationSettings,
             torch::AtenSettings>;
using ConfigWithAll = typename detail::config_with<HandlerSettings>::type;

// f(table) for each table: pasta's own, then each handler's, in that order.
template <class F>
constexpr void for_each_variable_table_of_all(F&& f) {
  for_each_variable_table(f);
  for_each_type(HandlerSettings{}, [&](auto settings) {
    f(variables_of(static_cast<const typename decltype(settings)::type*>(nullptr)));
  });
}

// Every variable's name, in that order.
inline constexpr auto all_variables = [] {
  constexpr std::size_t count = [] {
    std::size_t n = 0;
    for_each_variable_table_of_all([&](const auto& table) { n += std::size(table); });
    return n;
  }();
  std::array<std::string_view, count> names{};
  std::size_t n = 0;
  for_each_variable_table_of_all([&](const auto& table) {
    for (const auto& row : table) names[n++] = row.name;
  });
  return names;
}();

}  // namespace pasta
