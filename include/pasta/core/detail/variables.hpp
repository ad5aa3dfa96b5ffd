// One row per PASTA_* variable: its name, what it accepts, how its text sets
// a settings field, and what a rejected value leaves in place. Tables of rows
// (core/config.hpp, and the handlers' settings headers) are the only place a
// variable is defined; apply_env, the unknown-variable warning, the docs
// check and the fuzzer read them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <pasta/core/detail/parse.hpp>

namespace pasta::detail {

// A variable that sets part of `Settings`.
template <class Settings>
struct Variable {
  using settings_type = Settings;
  std::string_view name;
  // What it accepts, in the rejection line: "expected <accepts>; using <kept>".
  std::string_view accepts;
  // Sets the field from a non-empty value; false rejects it, leaving the
  // field alone. `why` may say more, in parentheses after `accepts`.
  bool (*set)(Settings&, std::string_view value, std::string& why);
  // The value a rejection keeps, as the line shows it: kept_text where
  // given, else kept(settings).
  std::string (*kept)(const Settings&);
  std::string_view kept_text = {};
};

// "4096", "64K", "2M", "1G" (binary units).
inline std::optional<std::uint64_t> parse_bytes(std::string_view s) {
  std::uint64_t unit = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K':
      case 'k':
        unit = 1ull << 10;
        break;
      case 'M':
      case 'm':
        unit = 1ull << 20;
        break;
      case 'G':
      case 'g':
        unit = 1ull << 30;
        break;
      default:
        break;
    }
    if (unit != 1) s.remove_suffix(1);
  }
  auto v = parse_uint(s);
  if (!v || *v > std::numeric_limits<std::uint64_t>::max() / unit) return std::nullopt;
  return *v * unit;
}

inline std::optional<bool> parse_bool(std::string_view s) {
  if (s == "1" || s == "yes" || s == "on" || s == "true") return true;
  if (s == "0" || s == "no" || s == "off" || s == "false") return false;
  return std::nullopt;
}

// Calls f(item) for each item of the comma list `s` while f returns true;
// returns whether every item was taken.
template <class F>
bool for_each_item(std::string_view s, F&& f) {
  for (;;) {
    const auto comma = s.find(',');
    if (!f(s.substr(0, comma))) return false;
    if (comma == std::string_view::npos) return true;
    s.remove_prefix(comma + 1);
  }
}

// One accepted word and the value it stands for.
template <class T>
struct Choice {
  std::string_view name;
  T value;
};

// A comma list of names, each one bit of the result; nullopt if a name is unknown.
using Flag = Choice<unsigned>;
template <std::size_t N>
std::optional<unsigned> parse_flags(std::string_view s, const Flag (&flags)[N]) {
  unsigned out = 0;
  const bool ok = for_each_item(s, [&](std::string_view item) {
    const Flag* f = std::find_if(std::begin(flags), std::end(flags),
                                 [&](const Flag& x) { return x.name == item; });
    if (f == std::end(flags)) return false;
    out |= f->value;
    return true;
  });
  if (!ok) return std::nullopt;
  return out;
}

// Rows for the common kinds of value: Field is a pointer to the member the
// variable sets, e.g. var::flag<&Config::verbose>("PASTA_VERBOSE").
namespace var {

template <class>
struct member_of;
template <class S, class T>
struct member_of<T S::*> {
  using type = S;
};
template <auto Field>
using owner = typename member_of<decltype(Field)>::type;

inline constexpr std::string_view boolean_words = "1, yes, on, true or 0, no, off, false";

// Any text (a path, a file name): never rejected.
template <auto Field>
constexpr Variable<owner<Field>> text(std::string_view name, std::string_view accepts) {
  return {name, accepts,
          [](owner<Field>& s, std::string_view v, std::string&) {
            s.*Field = std::string(v);
            return true;
          },
          [](const owner<Field>& s) -> std::string { return s.*Field; }};
}

// On or off; a rejection keeps "on" or "off".
template <auto Field>
constexpr Variable<owner<Field>> flag(std::string_view name) {
  return {name, boolean_words,
          [](owner<Field>& s, std::string_view v, std::string&) {
            const auto b = parse_bool(v);
            if (b) s.*Field = *b;
            return b.has_value();
          },
          [](const owner<Field>& s) -> std::string { return s.*Field ? "on" : "off"; }};
}

// A whole number in [Min, Max]; Sized: with K, M, G suffixes; PowerOfTwo:
// only powers of two. A rejection keeps the field's number.
template <auto Field, std::uint64_t Min = 0, std::uint64_t Max = UINT64_MAX, bool Sized = false,
          bool PowerOfTwo = false>
constexpr Variable<owner<Field>> whole(std::string_view name, std::string_view accepts) {
  return {name, accepts,
          [](owner<Field>& s, std::string_view v, std::string&) {
            const auto n = Sized ? parse_bytes(v) : parse_uint(v);
            if (!n) return false;
            // Only the bounds there are: nvcc warns of a comparison that is always false.
            if constexpr (Min > 0)
              if (*n < Min) return false;
            if constexpr (Max < UINT64_MAX)
              if (*n > Max) return false;
            if constexpr (PowerOfTwo)
              if ((*n & (*n - 1)) != 0) return false;
            s.*Field = static_cast<std::remove_cvref_t<decltype(s.*Field)>>(*n);
            return true;
          },
          [](const owner<Field>& s) -> std::string { return std::to_string(s.*Field); }};
}
template <auto Field, std::uint64_t Min, std::uint64_t Max>
constexpr Variable<owner<Field>> size(std::string_view name, std::string_view accepts) {
  return whole<Field, Min, Max, true>(name, accepts);
}
template <auto Field, std::uint64_t Min, std::uint64_t Max>
constexpr Variable<owner<Field>> power_of_two(std::string_view name, std::string_view accepts) {
  return whole<Field, Min, Max, true, true>(name, accepts);
}

// One word of Choices (a constexpr array of Choice); a rejection keeps the
// current value's word, or says `kept_text`.
template <auto Field, const auto& Choices>
constexpr Variable<owner<Field>> one_of(std::string_view name, std::string_view accepts,
                                        std::string_view kept_text = {}) {
  return {name, accepts,
          [](owner<Field>& s, std::string_view v, std::string&) {
            for (const auto& c : Choices) {
              if (c.name != v) continue;
              s.*Field = c.value;
              return true;
            }
            return false;
          },
          [](const owner<Field>& s) -> std::string {
            for (const auto& c : Choices)
              if (c.value == s.*Field) return std::string(c.name);
            return "the previous value";
          },
          kept_text};
}

// A comma list of words of Flags (a constexpr array of Flag); a rejection
// says `kept_text`.
template <auto Field, const auto& Flags>
constexpr Variable<owner<Field>> flags(std::string_view name, std::string_view accepts,
                                       std::string_view kept_text) {
  return {name, accepts,
          [](owner<Field>& s, std::string_view v, std::string&) {
            const auto bits = parse_flags(v, Flags);
            if (bits) s.*Field = *bits;
            return bits.has_value();
          },
          nullptr, kept_text};
}

}  // namespace var

// Applies every variable of `table` that `lookup(name)` sets (nullptr or ""
// = unset) to `s`, in table order; one line per rejected value into `errors`.
template <class Settings, std::size_t N, class Lookup>
void apply_variables(Settings& s, const Variable<Settings> (&table)[N], Lookup&& lookup,
                     std::vector<std::string>& errors) {
  for (const auto& row : table) {
    const char* value = lookup(row.name.data());  // names are literals: NUL-terminated
    if (value == nullptr || *value == '\0') continue;
    std::string why;
    if (row.set(s, value, why)) continue;
    std::string line = std::string(row.name) + "=\"" + value + "\" is not accepted: expected " +
                       std::string(row.accepts);
    if (!why.empty()) line += " (" + why + ")";
    errors.push_back(line + "; using " +
                     (row.kept_text.empty() ? row.kept(s) : std::string(row.kept_text)));
  }
}

// The names of every table of variables that this program holds: a settings
// header enters its own when it is included (known_variables_entered), so the
// unknown-variable warning knows each handler compiled in, while core names
// none. Inline, not compiled: one list per program in either build.
struct KnownVariables {
  std::mutex mutex;
  std::vector<std::string_view> names;
};
inline KnownVariables& known_variables() {
  static KnownVariables known;
  return known;
}
template <class Settings, std::size_t N>
bool enter_known_variables(const Variable<Settings> (&table)[N]) {
  auto& known = known_variables();
  const std::lock_guard lock(known.mutex);
  for (const auto& row : table)
    if (std::find(known.names.begin(), known.names.end(), row.name) == known.names.end())
      known.names.push_back(row.name);
  return true;
}

}  // namespace pasta::detail
