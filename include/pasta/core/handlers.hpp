// Several handlers in one handler slot (e.g. CUDA and framework events in
// one run), and Direct, the handler for events the program emits itself.
#pragma once

#include <string>
#include <tuple>
#include <utility>

#include <pasta/core/detail/capture_window.hpp>
#include <pasta/core/concepts.hpp>
#include <pasta/core/pipeline.hpp>

namespace pasta {

// Subscribes to nothing: events reach the tools through Profiler::emit.
struct Direct {
  static constexpr std::string_view name = "direct";
  template <class Sink>
  void start(Sink&) {}
  void stop() {}
  void flush() {}
};

namespace detail {
// CUDA lets one tools library subscribe per process: CUPTI refuses a second
// subscriber, and the Sanitizer API goes silent after CUPTI.
template <class H>
concept CudaToolsSubscriber = requires {
  { H::cuda_tools_subscriber } -> std::convertible_to<std::string_view>;
};

template <class Seq, class... Hs>
class HandlersImpl;

template <std::size_t... I, class... Hs>
class HandlersImpl<std::index_sequence<I...>, Hs...> : Slot<I, Hs>... {
 public:
  // `c`: a Config with every handler's own settings (ConfigFor<Handlers<...>>).
  template <class C>
  explicit HandlersImpl(const C& c) : Slot<I, Hs>(c)... {}

  // What the handlers together see of a capture range's boundaries.
  static constexpr unsigned capture_sources = (0u | ... | capture_sources_of<Hs>());

  template <class Sink>
  void start(Sink& sink) {
    (static_cast<Slot<I, Hs>&>(*this).value.start(sink), ...);
  }
  void stop() { stop_first<sizeof...(Hs)>(); }  // the reverse of start
  void flush() { (static_cast<Slot<I, Hs>&>(*this).value.flush(), ...); }

  // Why some handler delivered only part of its events; empty if none did.
  std::string partial_reason() const {
    std::string why;
    auto add = [&](const auto& h) {
      if constexpr (requires { h.partial_reason(); }) {
        const std::string r = h.partial_reason();
        if (!r.empty()) why += (why.empty() ? "" : "; ") + r;
      }
    };
    (add(static_cast<const Slot<I, Hs>&>(*this).value), ...);
    return why;
  }

  // f(handler) for each handler, in order: the profiler writes each one's own report.
  template <class F>
  void each(F&& f) const {
    (f(static_cast<const Slot<I, Hs>&>(*this).value), ...);
  }

  template <class H>
  H& get() {
    static_assert(index_of<H, Hs...> < sizeof...(Hs), "this handler is not in the Handlers list");
    return static_cast<Slot<index_of<H, Hs...>, H>&>(*this).value;
  }

 private:
  template <std::size_t N>
  void stop_first() {
    if constexpr (N > 0) {
      using H = std::tuple_element_t<N - 1, std::tuple<Hs...>>;
      static_cast<Slot<N - 1, H>&>(*this).value.stop();
      stop_first<N - 1>();
    }
  }
};
}  // namespace detail

// pasta::Handlers<nv::Cupti, torch::Aten>: starts each in order, stops them
// in reverse, and lets the profiler reach each one with get<H>().
template <class... Hs>
class Handlers : public detail::HandlersImpl<std::index_sequence_for<Hs...>, Hs...> {
  using Base = detail::HandlersImpl<std::index_sequence_for<Hs...>, Hs...>;
  static_assert(sizeof...(Hs) > 0, "pasta::Handlers needs at least one handler");
  static_assert(detail::all_distinct<Hs...>, "pasta::Handlers names a handler twice");
  static_assert((0 + ... + int(detail::CudaToolsSubscriber<Hs>)) <= 1,
                "pasta::Handlers: nv::Cupti and nv::Sanitizer cannot share a process: CUDA "
                "takes one tools subscriber (CUPTI refuses a second one, and the Sanitizer API "
                "delivers nothing after CUPTI); profile them in two runs");

 public:
  static constexpr std::string_view name = "handlers";
  // The settings each handler brings, in order (ConfigFor composes them).
  using settings_list = decltype((TypeList<>{} + ... + SettingsOf<Hs>{}));
  using Base::Base;
};

}  // namespace pasta
