// One-line diagnostics on stderr, prefixed "pasta: ". Never throws; a test
// can capture the lines instead.
#pragma once

#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace pasta::detail {

using LogCapture = void (*)(std::string_view line, void* user);

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

// Writes "pasta: <message>" as one line.
inline void log(std::string_view message) noexcept {
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

// Logs a message once per key for the life of the process.
inline void log_once(std::string_view key, std::string_view message) noexcept {
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

// Redirects log lines to `capture` (nullptr restores stderr). For tests.
inline void set_log_capture(LogCapture capture, void* user) {
  LogState& s = log_state();
  std::scoped_lock lock(s.mutex);
  s.capture = capture;
  s.user = user;
  s.once.clear();
}

}  // namespace pasta::detail
