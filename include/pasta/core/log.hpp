// One-line diagnostics on stderr, prefixed "pasta: ". Never throws; a test
// can capture the lines instead.
#pragma once

#include <string_view>

#include <pasta/core/detail/api.hpp>

namespace pasta::detail {

using LogCapture = void (*)(std::string_view line, void* user);

// Writes "pasta: <message>" as one line.
PASTA_FUNC void log(std::string_view message) noexcept;

// Logs a message once per key for the life of the process.
PASTA_FUNC void log_once(std::string_view key, std::string_view message) noexcept;

// Redirects log lines to `capture` (nullptr restores stderr). For tests.
PASTA_FUNC void set_log_capture(LogCapture capture, void* user);

}  // namespace pasta::detail

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/core/detail/log_impl.hpp>
#endif
