// What a report or a trace says about the process that wrote it: its host,
// its command line, and the time, on POSIX calls.
#pragma once

#include <unistd.h>

#include <ctime>
#include <string>

#include <pasta/core/detail/files.hpp>

namespace pasta::detail {

// The host's name, or an empty string if it cannot be read.
inline std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return {};
  return host;
}

// The program and its arguments, separated by spaces.
inline std::string command_line() {
  std::string args = read_file("/proc/self/cmdline");
  for (char& c : args)
    if (c == '\0') c = ' ';
  while (!args.empty() && args.back() == ' ') args.pop_back();
  return args;
}

// Now, as 2026-11-25T01:02:03Z; empty if the clock cannot be read.
inline std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  char when[32] = {};
  if (!::gmtime_r(&now, &tm) || !std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm))
    return {};
  return when;
}

}  // namespace pasta::detail
