// The sink that handlers emit into: processor, then tools, dispatched by
// overload resolution at compile time. Events no tool (or processor) wants
// compile to nothing; the rest take one lock per event or per batch (a
// program thread that finds it taken queues its event instead of waiting).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/concepts.hpp>
#include <pasta/core/config.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/detail/pending_events.hpp>
#include <pasta/core/detail/thread.hpp>
#include <pasta/core/log.hpp>

namespace pasta {
class AccessRegions;  // core/access_regions.hpp: what Pipeline::access_regions fills
}  // namespace pasta

namespace pasta::detail {

// Whether T is made from the Config and its own settings (a handler that
// names `using settings = S;`), which a composed config `C` holds.
template <class T, class C>
concept TakesOwnSettings = requires { typename T::settings; } &&
                           std::derived_from<C, typename T::settings> &&
                           std::constructible_from<T, const Config&, const typename T::settings&>;

// Holds one policy object, constructed from the Config (and its own settings,
// out of the composed config `c`) when it takes them.
template <std::size_t I, class T>
struct Slot {
  T value;
  template <class C>
  explicit Slot(const C& c) requires TakesOwnSettings<T, C>
      : value(c, static_cast<const typename T::settings&>(c)) {}
  template <class C>
  explicit Slot(const C& c)
    requires(!TakesOwnSettings<T, C> && std::constructible_from<T, const Config&>)
      : value(c) {}
  template <class C>
  explicit Slot(const C&)
    requires(!TakesOwnSettings<T, C> && !std::constructible_from<T, const Config&>)
      : value() {}
};

template <class T, class... Ts>
inline constexpr std::size_t index_of = [] {
  constexpr bool same[] = {std::is_same_v<T, Ts>...};
  for (std::size_t i = 0; i < sizeof...(Ts); ++i)
    if (same[i]) return i;
  return sizeof...(Ts);
}();

template <class... Ts>
inline constexpr bool all_distinct = [] {
  constexpr std::size_t n = sizeof...(Ts);
  if constexpr (n == 0) {
    return true;
  } else {
    constexpr std::size_t idx[] = {index_of<Ts, Ts...>...};
    for (std::size_t i = 0; i < n; ++i)
      if (idx[i] != i) return false;
    return true;
  }
}();

// Whether the tool named `name` runs under `c` (Config::tools, PASTA_TOOLS).
inline bool tool_selected(const Config& c, std::string_view name) {
  return c.tools.empty() || std::find(c.tools.begin(), c.tools.end(), name) != c.tools.end();
}

// Constructs `part` from the Config (and its own settings, out of the
// composed config `c`) when it takes them, else by default.
template <class T, class C>
void emplace_configured(std::optional<T>& part, const C& c) {
  if constexpr (TakesOwnSettings<T, C>)
    part.emplace(c, static_cast<const typename T::settings&>(c));
  else if constexpr (std::constructible_from<T, const Config&>)
    part.emplace(c);
  else
    part.emplace();
}

// One tool, constructed only when selected: a tool left out by PASTA_TOOLS
// allocates nothing, sees no event and writes no report.
template <std::size_t I, class T>
struct ToolSlot {
  std::optional<T> value;
  explicit ToolSlot(const Config& c) {
    if (tool_selected(c, T::name)) emplace_configured(value, c);
  }
};

// The tools, as the processor sees them: emit(e) calls every running tool
// that has an on() overload for E, in the order they were named.
template <class Seq, class... Tools>
class ToolSetImpl;

template <std::size_t... I, class... Tools>
class ToolSetImpl<std::index_sequence<I...>, Tools...> : ToolSlot<I, Tools>... {
 public:
  explicit ToolSetImpl(const Config& c) : ToolSlot<I, Tools>(c)... {}

  // Whether the handler should produce E: some tool takes it, and for an
  // event on request (concepts.hpp), names it.
  template <class E>
  static constexpr bool wants() {
    return (ToolRequests<Tools, E> || ...);
  }

  template <class E>
  void emit(const E& e) {
    (deliver(static_cast<ToolSlot<I, Tools>&>(*this).value, e), ...);
  }

  // Whether T runs (it is in the pipeline and PASTA_TOOLS did not leave it out).
  template <class T>
  bool running() const {
    static_assert(index_of<T, Tools...> < sizeof...(Tools), "this tool is not in the pipeline");
    return static_cast<const ToolSlot<index_of<T, Tools...>, T>&>(*this).value.has_value();
  }

  template <class T>
  T& get() {
    static_assert(index_of<T, Tools...> < sizeof...(Tools), "this tool is not in the pipeline");
    auto& slot = static_cast<ToolSlot<index_of<T, Tools...>, T>&>(*this).value;
    if (!slot)
      throw std::logic_error(fmt::format("pasta: tool {} is not running (PASTA_TOOLS)", T::name));
    return *slot;
  }

  // f(tool) for each running tool, in order.
  template <class F>
  void for_each(F&& f) {
    (visit(static_cast<ToolSlot<I, Tools>&>(*this).value, f), ...);
  }

 private:
  template <class T, class E>
  static void deliver(std::optional<T>& tool, const E& e) {
    if constexpr (ToolAccepts<T, E>)
      if (tool) tool->on(e);
  }
  template <class T, class F>
  static void visit(std::optional<T>& tool, F& f) {
    if (tool) f(*tool);
  }
};

template <class... Tools>
using ToolSet = ToolSetImpl<std::index_sequence_for<Tools...>, Tools...>;

// Depth of pasta dispatch on this thread: an event raised while a tool or
// processor is running (a CUDA call it makes, seen by a handler) must not
// re-enter the pipeline.
inline int& dispatch_depth() {
  static thread_local int depth PASTA_FAST_TLS = 0;
  return depth;
}

struct DispatchScope {
  DispatchScope() { ++dispatch_depth(); }
  ~DispatchScope() { --dispatch_depth(); }
  DispatchScope(const DispatchScope&) = delete;
  DispatchScope& operator=(const DispatchScope&) = delete;
};

inline bool inside_dispatch() { return dispatch_depth() > 0; }

// What reached a pipeline: whether its process did GPU work at all (a job's
// processes that did none write no reports), and how many kernels it saw.
struct Activity {
  std::uint64_t events = 0, launches = 0, completions = 0, device_work = 0;

  template <class E>
  void note() {
    ++events;
    if constexpr (std::is_same_v<E, KernelLaunch>)
      ++launches;
    else if constexpr (std::is_same_v<E, KernelComplete>)
      ++completions;
    else if constexpr (std::is_same_v<E, Memcpy> || std::is_same_v<E, Memset> ||
                       std::is_same_v<E, MemAccess> || std::is_same_v<E, AccessHistogram> ||
                       std::is_same_v<E, PcAccessCount> ||
                       std::is_same_v<E, KernelCounters> || std::is_same_v<E, StallSample>)
      ++device_work;
  }
  // Kernel launches: those seen launched, or completed where no launch was seen.
  std::uint64_t kernels() const { return std::max(launches, completions); }
  bool gpu_work() const { return kernels() > 0 || device_work > 0; }
};

template <class Proc, class... Tools>
class Pipeline {
 public:
  using ToolsType = ToolSet<Tools...>;

  explicit Pipeline(const Config& c) : proc_(c), tools_(c), queue_(c.host_queue) {}
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Whether an event of type E reaches any tool (directly or through the
  // processor). Handlers subscribe only to what this says.
  template <class E>
  static constexpr bool wants() {
    return Proc::template wants<ToolsType, E>();
  }

  // A program thread that finds the pipeline busy (pasta's worker is
  // processing a buffer) queues its event and goes on (pending_events.hpp);
  // once a handler's thread drains the queue (queue_always), every event of
  // a program thread is queued, and the tools' work leaves its threads.
  template <class E>
  void emit(const E& e) {
    if constexpr (wants<E>()) {
      if (inside_dispatch()) {
        reentrant_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      if constexpr (PendingEvents::holds<E>)
        if (always_.load(std::memory_order_relaxed) && pending_.push(e)) return;
      DispatchScope scope;
      std::unique_lock lock(mutex_, std::try_to_lock);
      if (!lock.owns_lock()) {
        if constexpr (PendingEvents::holds<E>)
          if (queue_ && pending_.push(e)) return;
        lock.lock();
      }
      drain_pending();
      process(e);
    }
  }

  // Runs f(sink) under one lock; `sink.emit(e)` inside f dispatches without
  // further locking. For handlers that deliver events in buffers.
  template <class F>
  void batch(F&& f) {
    if (inside_dispatch()) {
      reentrant_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    DispatchScope scope;
    std::scoped_lock lock(mutex_);
    drain_pending();
    Locked locked{*this};
    try {
      f(locked);
    } catch (...) {
      failed(std::current_exception());
    }
    drain_pending();
  }

  // The regions the tools tell apart in the accesses of the launch
  // `correlation` (core/access_regions.hpp), added to `out`; events program
  // threads queued are processed first, the launch's own included.
  void access_regions(std::uint64_t correlation, AccessRegions& out) {
    DispatchScope scope;
    std::scoped_lock lock(mutex_);
    drain_pending();
    tools_.for_each([&](const auto& tool) {
      if constexpr (requires { tool.access_regions(correlation, out); })
        tool.access_regions(correlation, out);
    });
  }

  // f(proc, tools) with the pipeline locked: reports read a quiet state.
  template <class F>
  void inspect(F&& f) {
    DispatchScope scope;
    std::scoped_lock lock(mutex_);
    drain_pending();
    f(proc_.value, tools_);
  }

  // For a handler with a thread of its own that calls settle() every few
  // milliseconds: program threads queue every event from now on (unless
  // PASTA_HOST_QUEUE=0). The thread must settle() until the handler stops.
  void queue_always() { always_.store(queue_, std::memory_order_relaxed); }
  void queue_when_busy() { always_.store(false, std::memory_order_relaxed); }

  // Processes the events program threads queued: what was emitted so far
  // is then in the tools' state.
  void settle() {
    if (inside_dispatch()) return;  // this thread holds the pipeline already
    DispatchScope scope;
    std::scoped_lock lock(mutex_);
    drain_pending();
  }

  Proc& processor() { return proc_.value; }
  ToolsType& tools() { return tools_; }
  const ToolsType& tools() const { return tools_; }
  std::uint64_t reentrant_events() const { return reentrant_.load(); }
  // Events program threads queued instead of waiting for the pipeline.
  std::uint64_t deferred_events() const { return pending_.deferred(); }
  std::uint64_t failures() const { return failures_.load(); }
  // What reached the pipeline so far.
  Activity activity() {
    std::scoped_lock lock(mutex_);
    drain_pending();
    return activity_;
  }

 private:
  // With the pipeline held.
  template <class E>
  void process(const E& e) {
    activity_.note<E>();
    try {
      proc_.value.on(e, tools_);
    } catch (...) {
      failed(std::current_exception());
    }
  }
  void drain_pending() {
    pending_.drain([this](const auto& e) {
      if constexpr (wants<std::remove_cvref_t<decltype(e)>>()) process(e);
    });
  }

  struct Locked {
    Pipeline& p;
    template <class E>
    static constexpr bool wants() {
      return Pipeline::wants<E>();
    }
    template <class E>
    void emit(const E& e) {
      if constexpr (wants<E>()) {
        p.activity_.template note<E>();
        p.proc_.value.on(e, p.tools_);
      }
    }
  };

  void failed(std::exception_ptr ex) noexcept {
    failures_.fetch_add(1, std::memory_order_relaxed);
    try {
      std::rethrow_exception(ex);
    } catch (const std::exception& e) {
      log_once(std::string("dispatch:") + e.what(),
               fmt::format("an analysis failed and skipped an event: {}", e.what()));
    } catch (...) {
      log_once("dispatch:unknown", "an analysis failed and skipped an event");
    }
  }

  std::mutex mutex_;
  Slot<0, Proc> proc_;
  ToolsType tools_;
  Activity activity_;  // guarded by mutex_
  PendingEvents pending_;
  const bool queue_;  // Config::host_queue
  std::atomic<bool> always_{false};
  std::atomic<std::uint64_t> reentrant_{0};
  std::atomic<std::uint64_t> failures_{0};
};

}  // namespace pasta::detail
