// Definitions for core/detail/regex.hpp: inline in header-only builds,
// compiled once otherwise (core/detail/api.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/regex.hpp>

namespace pasta::detail {

PASTA_FUNC std::string regex_complexity_error(std::string_view p) {
  constexpr std::uint64_t limit = 4096;
  if (p.size() > 4096) return fmt::format("a pattern of {} characters is over the 4096 limit", p.size());
  struct Frame {
    std::uint64_t sum = 0, last = 0;
    bool can_quantify = false, quantified = false;
  };
  std::vector<Frame> stack(1);
  auto atom = [&](std::uint64_t cost) {
    Frame& f = stack.back();
    f.sum += cost;
    f.last = cost;
    f.can_quantify = true;
    f.quantified = false;
  };
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    std::uint64_t factor = 0;
    if (c == '\\') {
      ++i;
      atom(1);
    } else if (c == '[') {  // a bracket expression is one atom
      std::size_t j = i + 1;
      if (j < p.size() && p[j] == '^') ++j;
      if (j < p.size() && p[j] == ']') ++j;
      while (j < p.size() && p[j] != ']') {
        if (p[j] == '[' && j + 1 < p.size() && (p[j + 1] == ':' || p[j + 1] == '.' || p[j + 1] == '=')) {
          const auto close = p.find(std::string{p[j + 1], ']'}, j + 2);
          if (close == std::string_view::npos) break;
          j = close + 1;
        } else {
          ++j;
        }
      }
      i = j;
      atom(1);
    } else if (c == '(') {
      stack.emplace_back();
    } else if (c == ')' && stack.size() > 1) {
      const std::uint64_t cost = std::max<std::uint64_t>(stack.back().sum, 1);
      stack.pop_back();
      atom(cost);
    } else if (c == '|') {
      stack.back().can_quantify = stack.back().quantified = false;
    } else if (c == '*' || c == '+' || c == '?') {
      factor = 2;
    } else if (c == '{' && stack.back().can_quantify) {
      const auto close = p.find('}', i);
      if (close == std::string_view::npos) {
        atom(1);
        continue;
      }
      std::uint64_t bound = 0, n = 0;
      for (std::size_t j = i + 1; j < close; ++j) {
        if (p[j] >= '0' && p[j] <= '9') {
          n = std::min<std::uint64_t>(n * 10 + static_cast<std::uint64_t>(p[j] - '0'), limit);
        } else {
          bound = std::max(bound, n);
          n = 0;
        }
      }
      factor = std::max(bound, n) + 1;
      i = close;
    } else {
      atom(1);
    }
    if (factor) {
      Frame& f = stack.back();
      if (f.quantified)
        return fmt::format("a repetition follows another at offset {} (\"{}\"): write one", i,
                           p.substr(0, i + 1));
      if (!f.can_quantify) continue;  // nothing to repeat: regcomp decides
      f.sum -= f.last;
      f.last = std::min(f.last * factor, limit + 1);
      f.sum += f.last;
      f.quantified = true;
      if (f.last > limit || f.sum > limit)
        return "nested repetitions too deep: the regex engine would need too much memory";
    }
  }
  std::uint64_t total = 0;
  for (const Frame& f : stack) total += f.sum;
  if (total > limit) return "the pattern is too large for the regex engine";
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
