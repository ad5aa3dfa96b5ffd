// Definitions for core/detail/profiler_setup.hpp: inline in header-only
// builds, compiled once otherwise (core/detail/api.hpp).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/capture_window.hpp>

#include <pasta/core/detail/profiler_setup.hpp>
#include <pasta/core/detail/this_process.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/process.hpp>

extern char** environ;

namespace pasta::detail {

// pasta's own variables, then those of the handlers' settings this program
// holds (core/detail/variables.hpp).
PASTA_FUNC std::vector<std::string_view> settable_variables() {
  std::vector<std::string_view> names(config_variables.begin(), config_variables.end());
  auto& entered = known_variables();
  const std::lock_guard lock(entered.mutex);
  for (auto name : entered.names)
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  return names;
}

PASTA_FUNC std::vector<std::string> unknown_variables(char** env) {
  std::vector<std::string> unknown;
  const auto settable = settable_variables();
  for (char** e = env; e && *e; ++e) {
    const std::string_view entry(*e);
    if (!entry.starts_with("PASTA_")) continue;
    const std::string_view key = entry.substr(0, entry.find('='));
    const auto known = [&](const auto& names) {
      return std::find(std::begin(names), std::end(names), key) != std::end(names);
    };
    if (!known(settable) && !known(other_known_variables)) unknown.emplace_back(key);
  }
  return unknown;
}

PASTA_FUNC unsigned next_job_profiler() {
  static std::atomic<unsigned> n{0};
  return n.fetch_add(1);
}

PASTA_FUNC std::string place_process(Config& cfg) {
  std::string job = job_dir(cfg.output_dir);
  auto getenv = [&](const char* name) -> const char* {
    return cfg.read_env ? std::getenv(name) : nullptr;
  };
  std::vector<std::string> errors;
  std::string host = host_name();
  cfg.process = identify(getenv, static_cast<std::uint64_t>(::getpid()),
                         static_cast<std::uint64_t>(::getppid()),
                         host.empty() ? "localhost" : std::move(host), errors);
  cfg.output_dir = process_output_dir(cfg.output_dir, cfg.process, getenv, errors);
  for (std::string* path : {&cfg.trace_file, &cfg.stall_samples})
    if (has_placeholder(*path)) *path = expand_placeholders(*path, cfg.process, getenv, errors);
  for (const auto& line : errors) log_once("process:" + line, line);
  return job;
}

PASTA_FUNC Config configure(Config cfg) {
  if (cfg.read_env) {
    for (const auto& line : apply_env(cfg)) log(line);
    for (const auto& name : unknown_variables(environ)) {
      log_once("unknown:" + name, fmt::format("{} is not a pasta variable; ignored (known: {})",
                                              name, join(settable_variables(), ", ")));
    }
  }
  if (!cfg.kernel_filter.empty()) {
    if (auto why = regex_error(cfg.kernel_filter); !why.empty()) {
      log(
          fmt::format("kernel filter \"{}\" is not a POSIX extended regular expression ({}); "
                      "profiling every kernel",
                      cfg.kernel_filter, why));
      cfg.kernel_filter.clear();
    }
  }
  return cfg;
}

PASTA_FUNC Config select_tools(Config cfg, std::span<const std::string_view> have) {
  std::vector<std::string> unknown;
  for (const auto& name : cfg.tools)
    if (std::find(have.begin(), have.end(), name) == have.end()) unknown.push_back(name);
  if (!unknown.empty()) {
    log(fmt::format("PASTA_TOOLS names {} that this profiler does not have (it has {}); "
                    "running every tool",
                    join(unknown, ", "), join(have, ", ")));
    cfg.tools.clear();
  }
  return cfg;
}

PASTA_FUNC std::string unseen_boundaries(const CaptureRange& r, unsigned seen) {
  using K = CaptureRange::Kind;
  if (r.kind == K::profiler_api && !(seen & capture_sources::profiler_api))
    return fmt::format("capture range {}: this profiler's handlers do not see "
                       "cudaProfilerStart; the window never opens",
                       r.spec);
  if (r.kind == K::steps && !(seen & capture_sources::steps))
    return fmt::format("capture range {}: optimizer steps come from a PyTorch handler "
                       "(torch::Aten, or torch::Steps for the steps alone), which this profiler "
                       "lacks; the window never opens",
                       r.spec);
  if (r.kind == K::nvtx && !(seen & capture_sources::ranges))
    return fmt::format("capture range {}: this profiler's handlers see neither NVTX ranges nor "
                       "record_function scopes; only pasta scopes named \"{}\" open the window",
                       r.spec, r.name);
  return {};
}

}  // namespace pasta::detail
