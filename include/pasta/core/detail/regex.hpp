// POSIX extended regular expressions (regcomp/regexec): the kernel filter's
// syntax. Chosen over std::regex for its compile time and speed.
#pragma once

#include <regex.h>

#include <string>
#include <utility>
#include <string_view>

#include <pasta/core/detail/api.hpp>

namespace pasta::detail {

// glibc's regcomp expands repetitions: memory doubles with each quantifier
// stacked on another ("a+++..." with 25 of them takes 6 GB) and with each
// level of nested quantified groups, which would let one bad
// PASTA_KERNEL_FILTER kill the profiled program. Patterns are checked first:
// a quantifier may not follow a quantifier (undefined in POSIX anyway), and
// the product of nested repetition counts (*, +, ? count 2; {m,n} counts
// n + 1) is capped. Found by fuzzing (tests/fuzz/fuzz_config.cpp).
// Empty if the pattern may be compiled, else why not.
PASTA_FUNC std::string regex_complexity_error(std::string_view p);

class Regex {
 public:
  // Compiles `pattern`; on failure, valid() is false and error() says why.
  PASTA_FUNC explicit Regex(const std::string& pattern);
  Regex(Regex&& o) noexcept : re_(std::exchange(o.re_, nullptr)), error_(std::move(o.error_)) {}
  Regex& operator=(Regex&& o) noexcept {
    if (this != &o) {
      release();
      re_ = std::exchange(o.re_, nullptr);
      error_ = std::move(o.error_);
    }
    return *this;
  }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex() { release(); }

  bool valid() const { return re_ != nullptr; }
  const std::string& error() const { return error_; }

  // True if the pattern matches somewhere in `text` (NUL-terminated).
  bool search(const char* text) const {
    return re_ && ::regexec(re_, text, 0, nullptr, 0) == 0;
  }

 private:
  // A compiled pattern is owned by hand: std::unique_ptr's <memory> brings
  // <ostream> into every unit that includes this (C++20).
  void release() {
    if (re_) ::regfree(re_);
    delete re_;
    re_ = nullptr;
  }
  regex_t* re_ = nullptr;
  std::string error_;
};

}  // namespace pasta::detail

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/core/detail/regex_impl.hpp>
#endif
