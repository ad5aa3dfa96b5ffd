// Definitions for core/detail/regex.hpp: inline in header-only builds,
// compiled once otherwise (core/detail/api.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/regex.hpp>

namespace pasta::detail {

// The pieces of regex_complexity_error: how many states a pattern's
// repetitions multiply to, counted per group.
namespace regex_cost {

inline constexpr std::uint64_t limit = 4096;

// Where the bracket expression that opens at p[i] ends: its ']'.
inline std::size_t bracket_end(std::string_view p, std::size_t i) {
  std::size_t j = i + 1;
  if (j < p.size() && p[j] == '^') ++j;
  if (j < p.size() && p[j] == ']') ++j;
  while (j < p.size() && p[j] != ']') {
    if (p[j] == '[' && j + 1 < p.size() &&
        (p[j + 1] == ':' || p[j + 1] == '.' || p[j + 1] == '=')) {
      const auto close = p.find(std::string{p[j + 1], ']'}, j + 2);
      if (close == std::string_view::npos) break;
      j = close + 1;
    } else {
      ++j;
    }
  }
  return j;
}

// What the interval p[open..close] ("{2,5}") multiplies its atom by: its
// largest bound plus one.
inline std::uint64_t interval_factor(std::string_view p, std::size_t open, std::size_t close) {
  std::uint64_t bound = 0, n = 0;
  for (std::size_t j = open + 1; j < close; ++j) {
    if (p[j] >= '0' && p[j] <= '9') {
      n = std::min<std::uint64_t>(n * 10 + static_cast<std::uint64_t>(p[j] - '0'), limit);
    } else {
      bound = std::max(bound, n);
      n = 0;
    }
  }
  return std::max(bound, n) + 1;
}

// The cost of each open group: its atoms' sum, the last atom (what a
// repetition multiplies), and whether that atom is repeated already.
class Groups {
 public:
  void atom(std::uint64_t cost) {
    Frame& f = stack_.back();
    f.sum += cost;
    f.last = cost;
    f.can_quantify = true;
    f.quantified = false;
  }
  void open() { stack_.emplace_back(); }
  bool nested() const { return stack_.size() > 1; }
  void close() {
    const std::uint64_t cost = std::max<std::uint64_t>(stack_.back().sum, 1);
    stack_.pop_back();
    atom(cost);
  }
  void alternative() { stack_.back().can_quantify = stack_.back().quantified = false; }
  bool can_quantify() const { return stack_.back().can_quantify; }
  // The last atom repeated up to `factor` times; why the pattern is refused,
  // or empty.
  std::string repeat(std::uint64_t factor, std::string_view p, std::size_t i) {
    Frame& f = stack_.back();
    if (f.quantified)
      return fmt::format("a repetition follows another at offset {} (\"{}\"): write one", i,
                         p.substr(0, i + 1));
    if (!f.can_quantify) return {};  // nothing to repeat: regcomp decides
    f.sum -= f.last;
    f.last = std::min(f.last * factor, limit + 1);
    f.sum += f.last;
    f.quantified = true;
    if (f.last > limit || f.sum > limit)
      return "nested repetitions too deep: the regex engine would need too much memory";
    return {};
  }
  std::uint64_t total() const {
    std::uint64_t total = 0;
    for (const Frame& f : stack_) total += f.sum;
    return total;
  }

 private:
  struct Frame {
    std::uint64_t sum = 0, last = 0;
    bool can_quantify = false, quantified = false;
  };
  std::vector<Frame> stack_ = std::vector<Frame>(1);
};

}  // namespace regex_cost

PASTA_FUNC std::string regex_complexity_error(std::string_view p) {
  using namespace regex_cost;
  if (p.size() > limit)
    return fmt::format("a pattern of {} characters is over the 4096 limit", p.size());
  Groups groups;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    std::uint64_t factor = 0;
    if (c == '\\') {
      ++i;
      groups.atom(1);
    } else if (c == '[') {  // a bracket expression is one atom
      i = bracket_end(p, i);
      groups.atom(1);
    } else if (c == '(') {
      groups.open();
    } else if (c == ')' && groups.nested()) {
      groups.close();
    } else if (c == '|') {
      groups.alternative();
    } else if (c == '*' || c == '+' || c == '?') {
      factor = 2;
    } else if (c == '{' && groups.can_quantify()) {
      const auto close = p.find('}', i);
      if (close == std::string_view::npos) {
        groups.atom(1);
        continue;
      }
      factor = interval_factor(p, i, close);
      i = close;
    } else {
      groups.atom(1);
    }
    if (factor)
      if (std::string why = groups.repeat(factor, p, i); !why.empty()) return why;
  }
  if (groups.total() > limit) return "the pattern is too large for the regex engine";
  return {};
}

PASTA_FUNC Regex::Regex(const std::string& pattern) {
  error_ = regex_complexity_error(pattern);
  if (!error_.empty()) return;
  auto* re = new regex_t;
  if (const int rc = ::regcomp(re, pattern.c_str(), REG_EXTENDED | REG_NOSUB); rc != 0) {
    char buf[256];
    ::regerror(rc, re, buf, sizeof buf);
    delete re;  // a regex_t that failed to compile is not regfree'd
    error_ = buf;
    return;
  }
  re_ = re;
}

}  // namespace pasta::detail
