// pasta::ProcessIdentity: which process of a job this is (rank, pid, host)
// and the name of its place under the output directory. core/process.hpp
// works it out from the environment.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <pasta/core/detail/fmt.hpp>

namespace pasta {

struct ProcessIdentity {
  std::uint64_t pid = 0;
  std::string host;
  std::optional<std::uint64_t> rank, local_rank, world_size;
  std::string rank_variable;  // the variable the rank came from, e.g. "RANK"
  std::string run_id;         // PASTA_RUN_ID: one `pasta run` (empty: none)
  // The process `pasta run` started itself (PASTA_LAUNCHER_PID is its parent).
  bool launcher_child = false;

  // Part of a job: started by `pasta run`, or given a rank by a launcher.
  bool in_job() const { return !run_id.empty() || rank.has_value(); }
  // Its place under the output directory: "rank3", "pid4242", or "" (the
  // directory itself: a process with no rank that `pasta run` started
  // directly, or any process with no rank outside `pasta run`).
  std::string dir_name() const {
    if (rank) return fmt::format("rank{}", *rank);
    if (!run_id.empty() && !launcher_child) return fmt::format("pid{}", pid);
    return {};
  }
  std::string label() const {
    return rank ? fmt::format("rank {} (pid {} on {})", *rank, pid, host)
                : fmt::format("pid {} on {}", pid, host);
  }
};

}  // namespace pasta
