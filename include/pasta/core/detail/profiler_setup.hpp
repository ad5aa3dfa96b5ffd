// What a Profiler does once, before its pipeline exists: the Config it
// runs with (PASTA_* variables applied, typos and a bad kernel filter
// reported) and the process's place in a job. Not templates: compiled once
// in a compiled build (core/detail/api.hpp).
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/api.hpp>
#include <pasta/core/process.hpp>

namespace pasta::detail {

// Variables that parts of pasta outside this library read, and who: the
// launcher (bin/pasta, share/pasta/launcher/) and CMake when pasta is built (often
// left exported in a shell that also runs programs). The unknown-variable
// warning leaves them alone; tests/cli/variables_test.py checks that each is
// read where this says and that the launcher reads no PASTA_* name that is
// neither here nor a variable of the library (pasta-trace variables).
struct OutsideVariable {
  std::string_view name, reader;
};
inline constexpr OutsideVariable read_outside[] = {
    {"PASTA_BUILD_DIR", "launcher"},  {"PASTA_INJECT_LIB", "launcher"},
    {"PASTA_TRACE_TOOL", "launcher"}, {"PASTA_STALL_ACCESS_LIB", "launcher"},
    {"PASTA_JOB_MEMORY", "launcher"}, {"PASTA_SANITIZER_ROOT", "cmake"},
    {"PASTA_TORCH_ROOT", "cmake"},
};

// What `pasta run` sets for the processes it starts (core/process.hpp), and
// what this library and the programs outside it read: every PASTA_* name
// that is no typo, besides the settings' variables.
inline constexpr auto other_known_variables = [] {
  std::array<std::string_view, 2 + std::size(read_outside)> names{run_id_variable,
                                                                  launcher_pid_variable};
  for (std::size_t i = 0; i < std::size(read_outside); ++i) names[2 + i] = read_outside[i].name;
  return names;
}();

// The variables a Config can be set by here: pasta's own, then those of each
// handler's settings this program holds.
PASTA_FUNC std::vector<std::string_view> settable_variables();

// PASTA_* variables in `env` that nothing reads: most likely typos.
PASTA_FUNC std::vector<std::string> unknown_variables(char** env);

// `cfg` with the environment's PASTA_* variables applied (when
// Config::read_env), each bad value and unknown variable logged once, and
// a kernel filter that is no POSIX extended regex cleared.
PASTA_FUNC Config configure(Config cfg);

// Who this process is, and its own output directory (core/process.hpp);
// placeholders in the trace and stall-sample paths are expanded too.
// Returns the job's directory, which holds every process's.
PASTA_FUNC std::string place_process(Config& cfg);

// 0 for this process's first profiler to join a job, then 1, 2...: each
// has its own entry in the job's list.
PASTA_FUNC unsigned next_job_profiler();

// Checks Config::tools (PASTA_TOOLS) against the names of the tools this
// profiler has. Any unknown name: one line, and every tool runs.
PASTA_FUNC Config select_tools(Config cfg, std::span<const std::string_view> have);

// Why a window of `r` cannot open under handlers that see `seen`
// (capture_sources:: bits); empty if it can.
PASTA_FUNC std::string unseen_boundaries(const CaptureRange& r, unsigned seen);

}  // namespace pasta::detail

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/core/detail/profiler_setup_impl.hpp>
#endif
