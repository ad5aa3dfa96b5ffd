// Definitions for core/log.hpp: inline in header-only builds, compiled once
// otherwise (core/detail/api.hpp).
#pragma once

#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include <pasta/core/log.hpp>

namespace pasta::detail {

struct LogState {
  std::mutex mutex;
  LogCapture capture = nullptr;
  void* user = nullptr;
  std::set<std::string, std::less<>> once;
};

inline LogState& log_state() {
  static LogState* state = new LogState;  // outlives static destructors that log
  return *state;
}

PASTA_FUNC void log(std::string_view message) noexcept {
  try {
    LogState& s = log_state();
    std::scoped_lock lock(s.mutex);
    if (s.capture) {
      s.capture(message, s.user);
      return;
    }
    std::string line = "pasta: ";
    line.append(message);
    line.push_back('\n');
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  } catch (...) {
  }
}

PASTA_FUNC void log_once(std::string_view key, std::string_view message) noexcept {
  try {
    LogState& s = log_state();
    {
      std::scoped_lock lock(s.mutex);
      if (!s.once.emplace(key).second) return;
    }
    log(message);
  } catch (...) {
  }
}

PASTA_FUNC void set_log_capture(LogCapture capture, void* user) {
  LogState& s = log_state();
  std::scoped_lock lock(s.mutex);
  s.capture = capture;
  s.user = user;
  s.once.clear();
}

}  // namespace pasta::detail
