// pasta::Profiler<Handler, Processor, Tools...>: construction subscribes,
// flush() and destruction write every tool's report. Nothing it does may
// throw into, stop, or change the profiled program.
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pasta/core/detail/exit_guard.hpp>
#include <pasta/core/detail/files.hpp>
#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/detail/process_registry.hpp>
#include <pasta/core/detail/profiler_setup.hpp>
#include <pasta/core/detail/scope_registry.hpp>
#include <pasta/core/detail/thread.hpp>

#include <pasta/core/capture.hpp>
#include <pasta/core/concepts.hpp>
#include <pasta/core/config.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/handlers.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/pipeline.hpp>
#include <pasta/core/report_writer.hpp>

namespace pasta {

namespace detail {

// One static_assert per part of each concept, so the first error names the
// part that is missing; the compiler's notes then show the concept.
template <class T>
consteval bool check_tool() {
  static_assert(ToolHasName<T>,
                "pasta: this Tool needs `static constexpr std::string_view name` (its reports' "
                "file name)");
  static_assert(ToolHandlesSomeEvent<T>,
                "pasta: this Tool has no on(const Event&) overload for any event in "
                "pasta::all_events");
  static_assert(ToolWritesReport<T>, "pasta: this Tool needs `void report(pasta::Report&) const`");
  static_assert(ConstructibleFromConfig<T>,
                "pasta: this Tool needs a default constructor or one taking const pasta::Config&");
  return true;
}

template <class P>
consteval bool check_processor() {
  static_assert(ProcessorForwardsEvents<P>,
                "pasta: this Processor needs `template <class Next, class E> void on(const E&, "
                "Next&)` (forward with next.emit(e))");
  static_assert(ProcessorDeclaresWants<P>,
                "pasta: this Processor needs `template <class Next, class E> static constexpr "
                "bool wants()`");
  static_assert(ConstructibleFromConfig<P>,
                "pasta: this Processor needs a default constructor or one taking const "
                "pasta::Config&");
  return true;
}

template <class H>
consteval bool check_handler() {
  static_assert(HandlerStarts<H>,
                "pasta: this Handler needs `template <class Sink> void start(Sink&)`");
  static_assert(HandlerStops<H>, "pasta: this Handler needs `void stop()` and `void flush()`");
  static_assert(ConstructibleFromConfig<H>,
                "pasta: this Handler needs a default constructor or one taking const "
                "pasta::Config&");
  return true;
}

template <class T>
concept HasReport = requires(const T& t, Report& r) {
  t.report(r);
  { T::name } -> std::convertible_to<std::string_view>;
};

}  // namespace detail

template <class HandlerSpec, class Proc, class... Tools>
class Profiler {
  static_assert(detail::check_handler<HandlerSpec>());
  static_assert(detail::check_processor<Proc>());
  static_assert((detail::check_tool<Tools>() && ...));
  static_assert(detail::all_distinct<Tools...>, "pasta: a tool is named twice in one Profiler");

 public:
  using Pipeline = detail::Pipeline<Proc, Tools...>;

  // Whether an event of type E reaches some tool in this composition.
  template <class E>
  static constexpr bool wants() {
    return Pipeline::template wants<E>();
  }

  // The names of the tools, in order: what PASTA_TOOLS chooses among.
  static constexpr std::array<std::string_view, sizeof...(Tools)> tool_names{Tools::name...};

  Profiler() : Profiler(Config{}) {}

  explicit Profiler(Config cfg)
      : config_(detail::select_tools(detail::configure(std::move(cfg)), tool_names)) {
    names();  // constructed before us, so destroyed after our reports
    try {
      const std::string job = detail::place_process(config_);
      if (config_.process.in_job()) join_job(job);
      if constexpr (requires { HandlerSpec::replays_whole; })
        if (!config_.capture.whole()) {
          detail::log(fmt::format("capture range {}: a trace replays whole (the range applies "
                                  "when it is recorded)",
                                  config_.capture.spec));
          config_.capture = {};
        }
      detail::capture_window().configure(config_.capture);
      if (config_.capture.kind == CaptureRange::Kind::invalid)
        detail::log(fmt::format("PASTA_CAPTURE_RANGE / Config::capture \"{}\" is not a capture "
                                "range ({}); nothing will be captured",
                                config_.capture.spec, config_.capture.error));
      else if (auto why = detail::unseen_boundaries(
                   config_.capture, detail::capture_sources_of<HandlerSpec>());
               !why.empty())
        detail::log(why);
      pipeline_.emplace(config_);
      // The handler exists before the first scope: constructing it may set
      // what NVTX reads when the scope registry initialises it.
      detail::emplace_configured(handler_, config_);
      if constexpr (wants<ScopeBegin>() || wants<ScopeEnd>()) {
        detail::scope_registry().add(
            {this, &scope_trampoline<ScopeBegin>, &scope_trampoline<ScopeEnd>});
        scopes_registered_ = true;
      }
      handler_->start(*pipeline_);
      detail::exit_guard_add(this, [](void* self, const std::string& why) {
        auto* p = static_cast<Profiler*>(self);
        p->stopped_by_ = why;
        p->stop();
      });
    } catch (const std::exception& e) {
      detail::log(fmt::format("profiler not started: {}; the program runs unprofiled", e.what()));
    } catch (...) {
      detail::log("profiler not started; the program runs unprofiled");
    }
  }

  ~Profiler() { stop(); }

  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Drains the handler's buffers and writes every report as it stands now.
  void flush() {
    try {
      if (handler_ && !stopped_) handler_->flush();
      call_on_parts([](auto& part) {
        if constexpr (requires { part.flush(); }) part.flush();
      });
    } catch (const std::exception& e) {
      detail::log(fmt::format("flush failed: {}", e.what()));
    }
    write_reports(false);
  }

  // Unsubscribes and writes the final reports; the destructor calls it.
  void stop() noexcept {
    if (stopped_) return;
    stopped_ = true;
    detail::exit_guard_remove(this);
    stop_began_ns_ = detail::steady_ns();
    if (scopes_registered_) detail::scope_registry().remove(this);
    try {
      if (handler_) handler_->stop();
      call_on_parts([](auto& part) {
        if constexpr (requires { part.finish(); }) part.finish();
      });
    } catch (const std::exception& e) {
      detail::log(fmt::format("stopping the profiler failed: {}", e.what()));
    } catch (...) {
    }
    write_reports(config_.print != PrintTo::none, true);
  }

  // Events the program gives directly (tests, device annotations, its own
  // handlers): one lock per event, or one per batch.
  template <class E>
  void emit(const E& e) {
    if (pipeline_) pipeline_->emit(e);
  }
  // f(sink) runs under one lock; sink.emit(e) inside it dispatches directly.
  template <class F>
  void batch(F&& f) {
    if (pipeline_) pipeline_->batch(std::forward<F>(f));
  }

  // A tool's state, with every event emitted so far in it; throws
  // std::logic_error if PASTA_TOOLS left it out.
  template <class T>
  T& tool() {
    pipeline_->settle();
    return pipeline_->tools().template get<T>();
  }
  // Whether T runs (PASTA_TOOLS did not leave it out).
  template <class T>
  bool running() const {
    return pipeline_ && pipeline_->tools().template running<T>();
  }
  Proc& processor() {
    pipeline_->settle();
    return pipeline_->processor();
  }
  HandlerSpec& handler() { return *handler_; }
  const Config& config() const { return config_; }
  bool active() const { return pipeline_.has_value() && handler_.has_value(); }
  // Files written by the last flush() or stop().
  const std::vector<std::string>& files() const { return files_; }
  // In a job: this process's entry in the job's list (else empty).
  std::string job_entry() const { return registry_ ? registry_->path() : std::string(); }

 private:
  // Enters this process in the job's list, and says so when another process
  // of the same run already holds its rank.
  void join_job(const std::string& job) {
    registry_.emplace(config_.process, job, config_.output_dir,
                      detail::next_job_profiler());
    if (config_.process.rank)
      for (const auto& other : registry_->others())
        if (other.rank == config_.process.rank && other.pid != config_.process.pid)
          detail::log(fmt::format(
              "rank {} ({}) is also claimed by pid {} on {}; the reports in {} are this "
              "process's and may mix with that one's",
              *config_.process.rank, config_.process.rank_variable, other.pid, other.host,
              config_.output_dir));
    registry_->started();
  }

  template <class E>
  static void scope_trampoline(void* self, const E& e) {
    static_cast<Profiler*>(self)->emit(e);
  }

  // f(processor) then f(tool) for each tool, with the pipeline locked.
  template <class F>
  void call_on_parts(F&& f) {
    if (!pipeline_) return;
    pipeline_->inspect([&](Proc& proc, auto& tools) {
      f(proc);
      tools.for_each(f);
    });
  }

  void write_reports(bool announce, bool final = false) noexcept {
    if (!pipeline_) return;
    try {
      // A job's process that did no GPU work (torchrun's own process, a
      // launcher script) writes no reports: only its entry in the job's list.
      // A window that never opened is said at exit, in every report and in
      // the job's list.
      const detail::Activity activity = pipeline_->activity();
      const auto window = detail::capture_window().summary();
      const std::string unopened = detail::never_opened(window);
      if (final && !unopened.empty()) detail::log(unopened);
      const std::string window_line = detail::report_line(window);
      // (A process whose window never opened did none in it, and writes its
      // reports all the same: they say why they are empty.)
      if (registry_ && !activity.gpu_work() && unopened.empty()) {
        if (final) registry_->finished(outcome(activity, {}), stopped_by_);
        files_.clear();
        return;
      }
      Config cfg = config_;
      if (!announce) cfg.print = PrintTo::none;
      std::string partial;
      if constexpr (requires(const HandlerSpec& h) { h.partial_reason(); })
        if (handler_) partial = handler_->partial_reason();
      if (!stopped_by_.empty()) partial = partial.empty() ? stopped_by_ : stopped_by_ + "; " + partial;
      if (!unopened.empty()) partial = partial.empty() ? unopened : unopened + "; " + partial;
      std::vector<std::string> files;
      auto write = [&](const auto& part) {
        using T = std::remove_cvref_t<decltype(part)>;
        if constexpr (detail::HasReport<T>) {
          Report r{std::string(T::name)};
          part.report(r);
          if (!partial.empty()) r.mark_partial(partial);
          r.set_window(window_line);
          for (auto& f : detail::write_report(r, cfg)) files.push_back(std::move(f));
        }
      };
      call_on_parts(write);
      if (handler_) {  // what the handler itself did, or each of several handlers
        if constexpr (requires { handler_->each(write); })
          handler_->each(write);
        else
          write(*handler_);
      }
      if (auto n = pipeline_->reentrant_events())
        detail::log(
            fmt::format("{} events raised by pasta's own device work were not analysed", n));
      if (final && config_.verbose)
        if (auto n = pipeline_->deferred_events())
          detail::log(fmt::format("{} events of program threads were queued while the pipeline "
                                  "was busy, instead of waiting",
                                  n));
      // PASTA_VERBOSE says it even with PASTA_PRINT=none: the benchmarks read the stop time.
      if ((announce || (final && config_.verbose)) && !files.empty())
        detail::log(fmt::format("{} report files in {}/ (stopping took {:.1f} ms)", files.size(),
                                config_.output_dir, (detail::steady_ns() - stop_began_ns_) / 1e6));
      if (final && registry_)
        registry_->finished(outcome(activity, partial, !unopened.empty()), stopped_by_);
      files_ = std::move(files);
    } catch (const std::exception& e) {
      detail::log(fmt::format("writing reports failed: {}", e.what()));
    } catch (...) {
      detail::log("writing reports failed");
    }
  }

  // What the job's list says this process did: its report files are the
  // plain files in its directory (with one process per directory).
  // `reported`: it wrote reports without GPU work (its capture window never opened).
  detail::ProcessOutcome outcome(const detail::Activity& a, const std::string& partial,
                                 bool reported = false) const {
    detail::ProcessOutcome o{.launches = a.kernels(),
                             .events = a.events,
                             .gpu_work = a.gpu_work() || reported,
                             .reports = {},
                             .partial = partial};
    if (o.gpu_work)
      for (auto& name : detail::list_dir(config_.output_dir))
        if (!name.ends_with(".tmp") &&
            !detail::is_directory(detail::join_path(config_.output_dir, name)))
          o.reports.push_back(std::move(name));
    std::sort(o.reports.begin(), o.reports.end());
    return o;
  }

  Config config_;
  std::optional<detail::ProcessRegistry> registry_;  // in a job: its list of processes
  std::optional<Pipeline> pipeline_;
  std::optional<HandlerSpec> handler_;
  bool scopes_registered_ = false;
  bool stopped_ = false;
  std::string stopped_by_;  // why the program ended before the profiler did (exit_guard_add)
  std::uint64_t stop_began_ns_ = 0;  // steady clock: the final flush, finish and reports
  std::vector<std::string> files_;
};

}  // namespace pasta
