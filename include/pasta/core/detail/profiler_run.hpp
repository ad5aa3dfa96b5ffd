// What every Profiler does whatever its handler, processor and tools: its
// Config, its place in a job, the capture window, and everything around
// writing reports except the reports themselves. Not a template: compiled
// once in a compiled build (core/detail/api.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/api.hpp>
#include <pasta/core/detail/process_registry.hpp>
#include <pasta/core/detail/thread.hpp>

namespace pasta {
class Report;

namespace detail {

// What reached the pipeline, as the job's list and the reports need it.
struct RunActivity {
  std::uint64_t kernels = 0, events = 0;
  bool gpu_work = false;
};

class ProfilerRun {
 public:
  // The Config (PASTA_* variables, PASTA_TOOLS against `tool_names`), the
  // process's place in its job and the capture window. `replays_whole`: the
  // handler replays a trace, to which a capture range does not apply;
  // `capture_sources`: the boundaries the handler sees. If any of it fails,
  // started() is false and the log says the program runs unprofiled.
  PASTA_FUNC ProfilerRun(Config cfg, std::span<const std::string_view> tool_names,
                         bool replays_whole, unsigned capture_sources);
  PASTA_FUNC ~ProfilerRun();
  ProfilerRun(const ProfilerRun&) = delete;
  ProfilerRun& operator=(const ProfilerRun&) = delete;

  bool started() const { return started_; }
  const Config& config() const { return config_; }
  const std::vector<std::string>& files() const { return files_; }
  std::string job_entry() const { return registry_ ? registry_->path() : std::string(); }
  // Why the program ended before the profiler did (the exit guard).
  void stopped_by(std::string why) { stopped_by_ = std::move(why); }
  void stop_began() { stop_began_ns_ = steady_ns(); }

  // One writing of every report: what each report is marked with.
  struct Pass {
    std::string partial;      // why the reports are partial (empty: whole)
    std::string window_line;  // the capture window, for every report
    std::string unopened;     // why the window never opened (empty: it did)
    bool announce = false, final = false;
    std::vector<std::string> files;
  };
  // Starts a writing; nothing when this process writes no reports (a job's
  // process that did no GPU work: its entry in the job's list says so).
  // `handler_partial`: why the handler delivered only part of its events.
  PASTA_FUNC std::optional<Pass> begin_reports(const RunActivity& a, bool announce, bool final,
                                               const std::string& handler_partial);
  // Marks `r` and writes its files.
  PASTA_FUNC void write(Report& r, Pass& pass) const;
  // Ends a writing: the log lines, the job's list, files().
  PASTA_FUNC void end_reports(const RunActivity& a, Pass pass, std::uint64_t reentrant,
                              std::uint64_t deferred);

 private:
  PASTA_FUNC void join_job(const std::string& job);
  // What the job's list says this process did: its report files are the
  // plain files in its directory (with one process per directory).
  // `reported`: it wrote reports without GPU work (its capture window never opened).
  PASTA_FUNC ProcessOutcome outcome(const RunActivity& a, const std::string& partial,
                                    bool reported) const;

  Config config_;
  Config quiet_;  // config_ with PrintTo::none: reports written without printing
  std::optional<ProcessRegistry> registry_;  // in a job: its list of processes
  bool started_ = false;
  std::string stopped_by_;
  std::uint64_t stop_began_ns_ = 0;  // steady clock: the final flush, finish and reports
  std::vector<std::string> files_;
};

}  // namespace detail
}  // namespace pasta

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/core/detail/profiler_run_impl.hpp>
#endif
