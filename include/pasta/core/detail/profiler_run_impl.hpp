// The definitions of core/detail/profiler_run.hpp.
#pragma once

#include <algorithm>
#include <exception>
#include <utility>

#include <pasta/core/capture.hpp>
#include <pasta/core/detail/files.hpp>
#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/detail/profiler_run.hpp>
#include <pasta/core/detail/profiler_setup.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/report.hpp>
#include <pasta/core/report_writer.hpp>

namespace pasta::detail {

PASTA_FUNC ProfilerRun::ProfilerRun(Config cfg, std::span<const std::string_view> tool_names,
                                    bool replays_whole, unsigned capture_sources)
    : config_(select_tools(configure(std::move(cfg)), tool_names)) {
  names();  // constructed before the profiler, so destroyed after its reports
  try {
    const std::string job = place_process(config_);
    if (config_.process.in_job()) join_job(job);
    if (replays_whole && !config_.capture.whole()) {
      log(fmt::format("capture range {}: a trace replays whole (the range applies when it is "
                      "recorded)",
                      config_.capture.spec));
      config_.capture = {};
    }
    capture_window().configure(config_.capture);
    if (config_.capture.kind == CaptureRange::Kind::invalid)
      log(fmt::format("PASTA_CAPTURE_RANGE / Config::capture \"{}\" is not a capture range ({}); "
                      "nothing will be captured",
                      config_.capture.spec, config_.capture.error));
    else if (auto why = unseen_boundaries(config_.capture, capture_sources); !why.empty())
      log(why);
    quiet_ = config_;
    quiet_.print = PrintTo::none;
    started_ = true;
  } catch (const std::exception& e) {
    log(fmt::format("profiler not started: {}; the program runs unprofiled", e.what()));
  } catch (...) {
    log("profiler not started; the program runs unprofiled");
  }
}

PASTA_FUNC ProfilerRun::~ProfilerRun() = default;

// Enters this process in the job's list, and says so when another process
// of the same run already holds its rank.
PASTA_FUNC void ProfilerRun::join_job(const std::string& job) {
  registry_.emplace(config_.process, job, config_.output_dir, next_job_profiler());
  if (config_.process.rank)
    for (const auto& other : registry_->others())
      if (other.rank == config_.process.rank && other.pid != config_.process.pid)
        log(fmt::format(
            "rank {} ({}) is also claimed by pid {} on {}; the reports in {} are this process's "
            "and may mix with that one's",
            *config_.process.rank, config_.process.rank_variable, other.pid, other.host,
            config_.output_dir));
  registry_->started();
}

PASTA_FUNC std::optional<ProfilerRun::Pass> ProfilerRun::begin_reports(
    const RunActivity& a, bool announce, bool final, const std::string& handler_partial) {
  // A job's process that did no GPU work (torchrun's own process, a launcher
  // script) writes no reports: only its entry in the job's list. A window
  // that never opened is said at exit, in every report and in the job's list.
  const auto window = capture_window().summary();
  Pass pass;
  pass.unopened = never_opened(window);
  pass.announce = announce;
  pass.final = final;
  if (final && !pass.unopened.empty()) log(pass.unopened);
  // (A process whose window never opened did none in it, and writes its
  // reports all the same: they say why they are empty.)
  if (registry_ && !a.gpu_work && pass.unopened.empty()) {
    if (final) registry_->finished(outcome(a, {}, false), stopped_by_);
    files_.clear();
    return std::nullopt;
  }
  pass.window_line = report_line(window);
  std::string& partial = pass.partial;
  partial = handler_partial;
  if (!stopped_by_.empty()) partial = partial.empty() ? stopped_by_ : stopped_by_ + "; " + partial;
  if (!pass.unopened.empty())
    partial = partial.empty() ? pass.unopened : pass.unopened + "; " + partial;
  return pass;
}

PASTA_FUNC void ProfilerRun::write(Report& r, Pass& pass) const {
  if (!pass.partial.empty()) r.mark_partial(pass.partial);
  r.set_window(pass.window_line);
  for (auto& f : write_report(r, pass.announce ? config_ : quiet_))
    pass.files.push_back(std::move(f));
  // The files the tool wrote itself (a timeline, a profile, a picture) are reports too.
  for (const auto& f : r.attachments()) pass.files.push_back(f);
}

PASTA_FUNC void ProfilerRun::end_reports(const RunActivity& a, Pass pass, std::uint64_t reentrant,
                                         std::uint64_t deferred) {
  if (reentrant)
    log(fmt::format("{} events raised by pasta's own device work were not analysed", reentrant));
  if (pass.final && config_.verbose && deferred)
    log(fmt::format("{} events of program threads were queued while the pipeline was busy, "
                    "instead of waiting",
                    deferred));
  // PASTA_VERBOSE says it even with PASTA_PRINT=none: the benchmarks read the stop time.
  if ((pass.announce || (pass.final && config_.verbose)) && !pass.files.empty())
    log(fmt::format("{} report files in {}/ (stopping took {:.1f} ms)", pass.files.size(),
                    config_.output_dir, (steady_ns() - stop_began_ns_) / 1e6));
  if (pass.final && registry_)
    registry_->finished(outcome(a, pass.partial, !pass.unopened.empty()), stopped_by_);
  files_ = std::move(pass.files);
}

PASTA_FUNC ProcessOutcome ProfilerRun::outcome(const RunActivity& a, const std::string& partial,
                                               bool reported) const {
  ProcessOutcome o{.launches = a.kernels,
                   .events = a.events,
                   .gpu_work = a.gpu_work || reported,
                   .reports = {},
                   .partial = partial};
  if (o.gpu_work)
    for (auto& name : list_dir(config_.output_dir))
      if (!name.ends_with(".tmp") && !is_directory(join_path(config_.output_dir, name)))
        o.reports.push_back(std::move(name));
  std::sort(o.reports.begin(), o.reports.end());
  return o;
}

}  // namespace pasta::detail
