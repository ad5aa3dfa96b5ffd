// The three policy kinds a Profiler is composed of, as concepts. Each is
// split into named parts, so a misfit reads "NoOnTool does not satisfy
// ToolHandlesSomeEvent" rather than a page of template errors.
#pragma once

#include <concepts>
#include <string_view>

#include <pasta/core/config.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/report.hpp>

namespace pasta {

// --- Tool -------------------------------------------------------------------

template <class T, class E>
concept ToolAccepts = requires(T& tool, const E& event) {
  tool.on(event);
};

// Events whose measurement changes how the program runs (KernelCounters:
// kernel replay; StallSample: PC sampling) are on request: only a tool with
// an on() for that type turns them on. A tool that takes every event
// (EventCount, Record) still receives them once another tool has.
template <class E>
inline constexpr bool on_request = requires {
  requires E::on_request;
};

namespace detail {
// An event no tool names: only a tool that takes every event accepts it.
struct AnyEvent {
  static constexpr EventKind kind = static_cast<EventKind>(999);
  static constexpr std::string_view type_name = "AnyEvent";
};
}  // namespace detail

// Whether T makes the handler produce E (ToolSet::wants).
template <class T, class E>
concept ToolRequests = ToolAccepts<T, E> &&(!on_request<E> || !ToolAccepts<T, detail::AnyEvent>);

namespace detail {
template <class T>
inline constexpr bool accepts_some_event = any_of(all_events, [](auto type) {
  return ToolAccepts<T, typename decltype(type)::type>;
});
}  // namespace detail

template <class T>
concept ToolHandlesSomeEvent = detail::accepts_some_event<T>;

template <class T>
concept ToolHasName = requires {
  { T::name } -> std::convertible_to<std::string_view>;
};

template <class T>
concept ToolWritesReport = requires(const T& tool, Report& out) {
  tool.report(out);
};

// Made from the Config, from the Config and its own settings (a handler
// with `using settings = S;`), or by default.
template <class T>
concept ConstructibleFromConfig =
    std::constructible_from<T, const Config&> || std::default_initializable<T> ||
    requires { requires std::constructible_from<T, const Config&, const typename T::settings&>; };

template <class T>
concept Tool =
    ToolHasName<T> && ToolHandlesSomeEvent<T> && ToolWritesReport<T> && ConstructibleFromConfig<T>;

// --- Processor --------------------------------------------------------------

namespace detail {
// Stands in for the downstream stage when a processor is checked on its own.
struct ArchetypeNext {
  template <class E>
  static constexpr bool wants() {
    return true;
  }
  template <class E>
  void emit(const E&) {}
};
}  // namespace detail

template <class P>
concept ProcessorForwardsEvents = requires(P& p, const KernelLaunch& e,
                                           detail::ArchetypeNext& next) {
  p.on(e, next);
};

template <class P>
concept ProcessorDeclaresWants = requires {
  { P::template wants<detail::ArchetypeNext, KernelLaunch>() } -> std::convertible_to<bool>;
};

template <class P>
concept Processor =
    ProcessorForwardsEvents<P> && ProcessorDeclaresWants<P> && ConstructibleFromConfig<P>;

// --- Handler ----------------------------------------------------------------

namespace detail {
// Stands in for the profiler's sink when a handler is checked on its own.
struct ArchetypeSink {
  template <class E>
  static constexpr bool wants() {
    return true;
  }
  template <class E>
  void emit(const E&) {}
  template <class F>
  void batch(F&& f) {
    f(*this);
  }
};
}  // namespace detail

template <class H>
concept HandlerStarts = requires(H& h, detail::ArchetypeSink& sink) {
  h.start(sink);
};

template <class H>
concept HandlerStops = requires(H& h) {
  h.stop();
  h.flush();
};

template <class H>
concept Handler = HandlerStarts<H> && HandlerStops<H> && ConstructibleFromConfig<H>;

}  // namespace pasta
