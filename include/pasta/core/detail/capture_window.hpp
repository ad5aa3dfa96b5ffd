// The state of the capture window (core/capture.hpp): what handlers ask on
// their paths, kept free of formatting so that core/scope.hpp stays light.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/names.hpp>

namespace pasta {

// A window of the run to profile: parse_capture_range reads one (core/capture.hpp).
struct CaptureRange {
  enum class Kind : std::uint8_t { whole, profiler_api, nvtx, steps, invalid };
  Kind kind = Kind::whole;
  std::string name;                   // nvtx: the range's name
  std::uint64_t first = 0, last = 0;  // steps: the first and last step, inclusive
  std::string spec;                   // as given
  std::string error;                  // invalid: why

  bool whole() const { return kind == Kind::whole; }
};

// What the handlers of a profiler can see of a window's boundaries: a
// window whose boundaries none of them sees never opens, and the profiler
// says so when it starts.
namespace capture_sources {
inline constexpr unsigned profiler_api = 1;  // cudaProfilerStart/Stop
inline constexpr unsigned ranges = 2;        // NVTX ranges or record_function scopes
inline constexpr unsigned steps = 4;         // PyTorch optimizer steps
}  // namespace capture_sources

namespace detail {

// What a handler sees of a window's boundaries: its `capture_sources`
// (capture_sources:: bits), or nothing.
template <class H>
constexpr unsigned capture_sources_of() {
  if constexpr (requires { H::capture_sources; })
    return H::capture_sources;
  else
    return 0;
}

// PyTorch wraps each optimizer's step in a record_function of this prefix
// ("Optimizer.step#SGD.step"); a step ends when the outermost one ends.
inline constexpr std::string_view optimizer_step_prefix = "Optimizer.step#";

// The window's state. Handlers ask open() on their paths (one relaxed load)
// and report the boundaries they see; listeners (a handler that turns
// collection on and off) hear each change, on the thread that made it.
class CaptureWindow {
 public:
  using Listener = void (*)(void* owner, bool open);

  void configure(const CaptureRange& r) {
    std::scoped_lock lock(mutex_);
    range_ = r;
    target_ = r.kind == CaptureRange::Kind::nvtx ? intern(r.name) : NameId{};
    depth_ = 0;
    steps_ = 0;
    done_.store(false, std::memory_order_relaxed);
    kind_.store(r.kind, std::memory_order_relaxed);
    const bool at_start = r.whole() || (r.kind == CaptureRange::Kind::steps && r.first == 0);
    opened_ = at_start && !r.whole() ? 1 : 0;
    set(at_start);
  }

  bool open() const { return open_.load(std::memory_order_relaxed); }
  bool whole() const { return kind() == CaptureRange::Kind::whole; }
  // A steps window past its last step: it never opens again (read without
  // the lock, so a listener may ask it as the window closes).
  bool done() const { return done_.load(std::memory_order_relaxed); }
  CaptureRange::Kind kind() const { return kind_.load(std::memory_order_relaxed); }

  // cudaProfilerStart (start = true) or cudaProfilerStop.
  void profiler_api(bool start) {
    if (kind() != CaptureRange::Kind::profiler_api) return;
    std::scoped_lock lock(mutex_);
    if (start && !open()) ++opened_;
    set(start);
  }
  // A cuProfilerStart/Stop callback, at the call's entry or exit: the window
  // opens once Start returns and closes as Stop is called.
  void profiler_api_callback(bool start, bool at_exit) {
    if (start == at_exit) profiler_api(start);
  }
  // A range named `name` begins or ends (call begin before emitting the
  // range's own begin, and end after emitting its end, so the range that
  // opens the window is inside it).
  void range(NameId name, bool begin) {
    if (kind() != CaptureRange::Kind::nvtx || name != target_) return;
    std::scoped_lock lock(mutex_);
    if (begin) {
      if (depth_++ == 0) {
        ++opened_;
        set(true);
      }
    } else if (depth_ > 0 && --depth_ == 0) {
      set(false);
    }
  }
  // An optimizer step ended: the next step begins.
  void step_end() {
    if (kind() != CaptureRange::Kind::steps) return;
    std::scoped_lock lock(mutex_);
    const std::uint64_t step = ++steps_;
    const bool now = step >= range_.first && step <= range_.last;
    if (now && !open()) ++opened_;
    if (step > range_.last) done_.store(true, std::memory_order_relaxed);
    set(now);
  }

  // f(owner, open) at each change from now on; forget(owner) before it goes.
  void listen(void* owner, Listener f) {
    std::scoped_lock lock(mutex_);
    listeners_.push_back({owner, f});
  }
  void forget(void* owner) {
    std::scoped_lock lock(mutex_);
    std::erase_if(listeners_, [&](const Entry& e) { return e.owner == owner; });
  }

  struct Summary {
    CaptureRange range;
    std::uint64_t opened = 0;  // times the window opened
    std::uint64_t steps = 0;   // optimizer steps that ended
  };
  Summary summary() {
    std::scoped_lock lock(mutex_);
    return {range_, opened_, steps_};
  }

 private:
  struct Entry {
    void* owner;
    Listener f;
  };
  // With mutex_ held.
  void set(bool now) {
    if (open_.exchange(now, std::memory_order_relaxed) == now) return;
    for (const Entry& e : listeners_) e.f(e.owner, now);
  }

  std::mutex mutex_;
  std::atomic<bool> open_{true};
  std::atomic<bool> done_{false};
  std::atomic<CaptureRange::Kind> kind_{CaptureRange::Kind::whole};
  CaptureRange range_;
  NameId target_{};
  std::uint64_t depth_ = 0, steps_ = 0, opened_ = 0;
  std::vector<Entry> listeners_;
};

inline CaptureWindow& capture_window() {
  static CaptureWindow* w = new CaptureWindow;  // never destroyed: handlers ask it at exit
  return *w;
}

}  // namespace detail
}  // namespace pasta
