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
#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/detail/profiler_run.hpp>
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
                "pasta: this Handler needs a default constructor, one taking const "
                "pasta::Config&, or one taking const pasta::Config& and its own settings (`using "
                "settings = S;`)");
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

  // pasta's settings and the handlers' own (Config itself when they bring
  // none); a plain Config converts to it.
  using config_type = ConfigFor<HandlerSpec>;

  Profiler() : Profiler(config_type{}) {}

  explicit Profiler(config_type cfg)
      : run_(cfg, tool_names, requires { HandlerSpec::replays_whole; },
             detail::capture_sources_of<HandlerSpec>()),
        config_(std::move(cfg)) {
    static_cast<Config&>(config_) = run_.config();
    if (!run_.started()) return;
    try {
      if (config_.read_env) {  // pasta's own variables: applied by run_
        auto getenv = [](const char* name) { return std::getenv(name); };
        for (const auto& line : detail::apply_own_env(config_, getenv)) detail::log(line);
      }
      pipeline_.emplace(run_.config());
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
        p->run_.stopped_by(why);
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
    run_.stop_began();
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
    write_reports(run_.config().print != PrintTo::none, true);
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
  const config_type& config() const { return config_; }
  bool active() const { return pipeline_.has_value() && handler_.has_value(); }
  // Files written by the last flush() or stop().
  const std::vector<std::string>& files() const { return run_.files(); }
  // In a job: this process's entry in the job's list (else empty).
  std::string job_entry() const { return run_.job_entry(); }

 private:
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
      const detail::Activity a = pipeline_->activity();
      const detail::RunActivity activity{
          .kernels = a.kernels(), .events = a.events, .gpu_work = a.gpu_work()};
      std::string handler_partial;
      if constexpr (requires(const HandlerSpec& h) { h.partial_reason(); })
        if (handler_) handler_partial = handler_->partial_reason();
      auto pass = run_.begin_reports(activity, announce, final, handler_partial);
      if (!pass) return;
      auto write = [&](const auto& part) {
        using T = std::remove_cvref_t<decltype(part)>;
        if constexpr (detail::HasReport<T>) {
          Report r{std::string(T::name)};
          part.report(r);
          run_.write(r, *pass);
        }
      };
      call_on_parts(write);
      if (handler_) {  // what the handler itself did, or each of several handlers
        if constexpr (requires { handler_->each(write); })
          handler_->each(write);
        else
          write(*handler_);
      }
      run_.end_reports(activity, std::move(*pass), pipeline_->reentrant_events(),
                       pipeline_->deferred_events());
    } catch (const std::exception& e) {
      detail::log(fmt::format("writing reports failed: {}", e.what()));
    } catch (...) {
      detail::log("writing reports failed");
    }
  }

  detail::ProfilerRun run_;  // first: the Config the parts are made with
  config_type config_;       // run_'s Config with the handlers' own settings
  std::optional<Pipeline> pipeline_;
  std::optional<HandlerSpec> handler_;
  bool scopes_registered_ = false;
  bool stopped_ = false;
};

}  // namespace pasta
