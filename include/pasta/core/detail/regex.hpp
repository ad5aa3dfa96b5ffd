// POSIX extended regular expressions (regcomp/regexec): the kernel filter's
// syntax. Chosen over std::regex for its compile time and speed.
#pragma once

#include <regex.h>

#include <memory>
#include <string>

namespace pasta::detail {

class Regex {
 public:
  // Compiles `pattern`; on failure, valid() is false and error() says why.
  explicit Regex(const std::string& pattern) : re_(new regex_t) {
    const int rc = ::regcomp(re_.get(), pattern.c_str(), REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char buf[256];
      ::regerror(rc, re_.get(), buf, sizeof buf);
      error_ = buf;
      re_.reset();
    }
  }

  bool valid() const { return re_ != nullptr; }
  const std::string& error() const { return error_; }

  // True if the pattern matches somewhere in `text` (NUL-terminated).
  bool search(const char* text) const {
    return re_ && ::regexec(re_.get(), text, 0, nullptr, 0) == 0;
  }

 private:
  struct Free {
    void operator()(regex_t* r) const {
      ::regfree(r);
      delete r;
    }
  };
  std::unique_ptr<regex_t, Free> re_;
  std::string error_;
};

}  // namespace pasta::detail
