// A list of types as a value, walked with fold expressions: what the event
// list (all_events) and the Profiler's checks need of type-level code.
#pragma once

#include <cstddef>
#include <type_traits>

namespace pasta {

template <class... T>
struct TypeList {
  static constexpr std::size_t size = sizeof...(T);
};

// Two lists joined: (TypeList<>{} + ... + lists{}) folds several.
template <class... A, class... B>
constexpr TypeList<A..., B...> operator+(TypeList<A...>, TypeList<B...>) {
  return {};
}

// f(std::type_identity<T>{}) for each T, in order; `typename
// decltype(type)::type` names T inside f.
template <class... T, class F>
constexpr void for_each_type(TypeList<T...>, F&& f) {
  (f(std::type_identity<T>{}), ...);
}

// Whether pred(std::type_identity<T>{}) holds for some T.
template <class... T, class Pred>
constexpr bool any_of(TypeList<T...>, Pred&& pred) {
  return (static_cast<bool>(pred(std::type_identity<T>{})) || ...);
}

}  // namespace pasta
