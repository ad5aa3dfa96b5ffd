// Which process of a job this is, and where its reports go. A launcher's
// rank variable names the process (PyTorch, Open MPI, PMIx, MPICH and
// Intel MPI, Slurm), else its pid; the output directory may name each
// process's place with placeholders, as Nsight Systems' -o does (the
// placeholders table). Pure functions of the environment, so tests can give
// any environment. These tables are the only ones: the pasta launcher asks
// for them and for its own directory's expansion (pasta-trace variables,
// pasta-trace expand).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/files.hpp>
#include <pasta/core/detail/parse.hpp>
#include <pasta/core/process_identity.hpp>

namespace pasta {

// Rank variables, first found wins: torchrun sets RANK in the workers it
// starts; under srun, SLURM_PROCID counts tasks, not the workers a task
// starts, so it comes last.
struct RankVariables {
  std::string_view rank, local_rank, world_size;
  std::string_view launcher;
};
inline constexpr RankVariables rank_variables[] = {
    {"RANK", "LOCAL_RANK", "WORLD_SIZE", "torchrun"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"},
    {"PMIX_RANK", "", "", "PMIx"},
    {"PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", "MPICH, Intel MPI"},
    {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "Slurm"},
};

// What `pasta run` tells the processes it starts: the run they belong to,
// and its own pid (its direct child writes into the output directory itself).
inline constexpr std::string_view run_id_variable = "PASTA_RUN_ID";
inline constexpr std::string_view launcher_pid_variable = "PASTA_LAUNCHER_PID";

// The placeholders of an output path: the letter after %, and what the
// rejection line says of it. %q takes a variable's name: %q{VAR}.
struct Placeholder {
  char letter;
  std::string_view means;  // "%p pid"
};
inline constexpr Placeholder placeholders[] = {
    {'p', "%p pid"},   {'h', "%h host"},  {'q', "%q{VAR}"},
    {'r', "%r rank"},  {'n', "%n place"}, {'%', "%% a %"},
};

namespace detail {

// Works out who this process is from `getenv`. A rank variable that is not
// a whole number adds a line to `errors` and is passed over.
template <class Getenv>
ProcessIdentity identify(Getenv&& getenv, std::uint64_t pid, std::uint64_t parent,
                         std::string host, std::vector<std::string>& errors) {
  ProcessIdentity id;
  id.pid = pid;
  id.host = std::move(host);
  auto value = [&](std::string_view name) -> std::optional<std::string> {
    if (name.empty()) return std::nullopt;
    const char* v = getenv(std::string(name).c_str());
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
  auto number = [&](std::string_view name) -> std::optional<std::uint64_t> {
    if (auto v = value(name)) return parse_uint(*v);
    return std::nullopt;
  };
  for (const RankVariables& vars : rank_variables) {
    const auto text = value(vars.rank);
    if (!text) continue;
    const auto rank = parse_uint(*text);
    if (!rank) {
      errors.push_back(fmt::format(
          "{}=\"{}\" is not a rank (a whole number >= 0); this process is named by its pid",
          vars.rank, *text));
      continue;
    }
    id.rank = rank;
    id.rank_variable = vars.rank;
    id.local_rank = number(vars.local_rank);
    id.world_size = number(vars.world_size);
    break;
  }
  if (auto run = value(run_id_variable)) id.run_id = *run;
  if (auto launcher = value(launcher_pid_variable))
    id.launcher_child = parse_uint(*launcher) == parent;
  return id;
}

inline bool has_placeholder(std::string_view pattern) {
  return pattern.find('%') != std::string_view::npos;
}

// The pattern with %p, %h, %q{VAR}, %r, %n and %% replaced. An unknown or
// unfinished placeholder stays as written and adds a line to `errors`; an
// unset %q{VAR} becomes empty, also with a line.
template <class Getenv>
std::string expand_placeholders(std::string_view pattern, const ProcessIdentity& id,
                                Getenv&& getenv, std::vector<std::string>& errors) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      if (pattern[i] == '%')
        errors.push_back(fmt::format("\"{}\": a lone % at the end (write %% for a %)", pattern));
      out += pattern[i];
      continue;
    }
    const char c = pattern[++i];
    if (c == 'p') {
      out += std::to_string(id.pid);
    } else if (c == 'h') {
      out += id.host;
    } else if (c == 'r') {
      out += std::to_string(id.rank.value_or(id.pid));
    } else if (c == 'n') {
      out += id.dir_name();
    } else if (c == '%') {
      out += '%';
    } else if (c == 'q' && i + 1 < pattern.size() && pattern[i + 1] == '{' &&
               pattern.find('}', i + 2) != std::string_view::npos) {
      const std::size_t close = pattern.find('}', i + 2);
      const std::string name(pattern.substr(i + 2, close - i - 2));
      const char* v = getenv(name.c_str());
      if (v == nullptr || *v == '\0')
        errors.push_back(fmt::format("\"{}\": %q{{{}}} is not set; it stands for nothing", pattern,
                                     name));
      else
        out += v;
      i = close;
    } else {
      std::string known;
      for (const Placeholder& p : placeholders)
        known += std::string(known.empty() ? "" : ", ") + std::string(p.means);
      errors.push_back(fmt::format("\"{}\": %{} is not a placeholder ({}); kept as written",
                                   pattern, c, known));
      out += '%';
      out += c;
    }
  }
  return out;
}

// Where this process writes: the output directory with its placeholders
// expanded when it has any (the user named each process's place), else the
// directory plus dir_name().
template <class Getenv>
std::string process_output_dir(std::string_view output_dir, const ProcessIdentity& id,
                               Getenv&& getenv, std::vector<std::string>& errors) {
  if (has_placeholder(output_dir)) return expand_placeholders(output_dir, id, getenv, errors);
  const std::string name = id.dir_name();
  return name.empty() ? std::string(output_dir) : join_path(output_dir, name);
}

// The job's directory, shared by all its processes: the output directory up
// to its first placeholder (the folder that holds it).
inline std::string job_dir(std::string_view output_dir) {
  const std::size_t percent = output_dir.find('%');
  if (percent == std::string_view::npos) return std::string(output_dir);
  const std::size_t slash = output_dir.rfind('/', percent);
  if (slash == std::string_view::npos) return ".";
  return std::string(output_dir.substr(0, slash == 0 ? 1 : slash));
}

}  // namespace detail
}  // namespace pasta
