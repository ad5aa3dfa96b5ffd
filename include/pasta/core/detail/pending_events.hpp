// Events of program threads queued instead of processed on those threads:
// when the pipeline is busy (pasta's worker is processing a buffer of device
// records), or always where a handler's thread drains the queue. Processed
// in the order they came, by the next thread that takes the pipeline, before
// its own event. Bounded: a full queue makes the emitter wait as before.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <vector>

#include <pasta/core/events.hpp>

namespace pasta::detail {

class PendingEvents {
 public:
  // Every event type traces carry (all_events); not ModuleImage, whose
  // image lives only during its callback.
  template <class E>
  static constexpr bool holds = any_of(all_events, [](auto type) {
    return std::is_same_v<typename decltype(type)::type, E>;
  });

  static constexpr std::size_t limit = std::size_t{1} << 16;

  // Queues e; false when the queue is full (the caller then waits its turn).
  template <class E>
  bool push(const E& e) {
    static_assert(holds<E>, "only the events traces carry are queued");
    {
      std::scoped_lock lock(mutex_);
      if (queue_.size() >= limit) return false;
      Queued& q = queue_.emplace_back();
      q.kind = E::kind;
      std::memcpy(q.bytes, &e, sizeof(E));
      waiting_.store(true, std::memory_order_release);
    }
    deferred_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  // f(event) for each queued event, oldest first. Call with the pipeline held.
  template <class F>
  void drain(F&& f) {
    if (!waiting_.load(std::memory_order_acquire)) return;
    {
      std::scoped_lock lock(mutex_);
      draining_.swap(queue_);
      waiting_.store(false, std::memory_order_relaxed);
    }
    for (const Queued& q : draining_)
      for_each_type(all_events, [&](auto type) {
        using E = typename decltype(type)::type;
        if (q.kind == E::kind) {
          E e;  // events are trivially copyable (the Event concept)
          std::memcpy(&e, q.bytes, sizeof(E));
          f(e);
        }
      });
    draining_.clear();  // keeps its capacity for the next swap
  }

  // Events queued so far.
  std::uint64_t deferred() const { return deferred_.load(std::memory_order_relaxed); }

 private:
  // An event as its bytes and its kind: what a std::variant of every event
  // type would hold, without instantiating one in every unit.
  static constexpr std::size_t max_bytes = [] {
    std::size_t n = 0;
    for_each_type(all_events,
                  [&](auto type) { n = std::max(n, sizeof(typename decltype(type)::type)); });
    return n;
  }();
  struct Queued {
    EventKind kind{};
    alignas(std::max_align_t) unsigned char bytes[max_bytes];
  };

  std::mutex mutex_;
  std::vector<Queued> queue_;     // guarded by mutex_
  std::vector<Queued> draining_;  // touched only with the pipeline held
  std::atomic<bool> waiting_{false};
  std::atomic<std::uint64_t> deferred_{0};
};

}  // namespace pasta::detail
