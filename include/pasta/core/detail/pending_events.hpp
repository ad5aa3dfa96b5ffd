// Events of program threads queued instead of processed on those threads:
// when the pipeline is busy (pasta's worker is processing a buffer of device
// records), or always where a handler's thread drains the queue. Processed
// in the order they came, by the next thread that takes the pipeline, before
// its own event. Bounded: a full queue makes the emitter wait as before.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <type_traits>
#include <variant>
#include <vector>

#include <pasta/core/events.hpp>

namespace pasta::detail {

class PendingEvents {
 public:
  // Every event type traces carry; not ModuleImage, whose image lives only
  // during its callback.
  using Any = std::variant<DeviceInfo, KernelLaunch, KernelComplete, MemAlloc, MemFree, Memcpy,
                           Memset, Synchronize, ModuleLoad, MemAccess, AccessHistogram,
                           ScopeBegin, ScopeEnd, OpBegin, OpEnd, TensorAlloc, TensorFree,
                           KernelCounters, StallSample, TensorView, FusedKernel, PcAccessCount>;
  static_assert(std::variant_size_v<Any> == event_type_count, "an event type is missing here");

  template <class E>
  static constexpr bool holds = []<class... Es>(std::variant<Es...>*) {
    return (std::is_same_v<E, Es> || ...);
  }(static_cast<Any*>(nullptr));

  static constexpr std::size_t limit = std::size_t{1} << 16;

  // Queues e; false when the queue is full (the caller then waits its turn).
  template <class E>
  bool push(const E& e) {
    {
      std::scoped_lock lock(mutex_);
      if (queue_.size() >= limit) return false;
      queue_.emplace_back(e);
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
    for (const Any& e : draining_) std::visit(f, e);
    draining_.clear();  // keeps its capacity for the next swap
  }

  // Events queued so far.
  std::uint64_t deferred() const { return deferred_.load(std::memory_order_relaxed); }

 private:
  std::mutex mutex_;
  std::vector<Any> queue_;     // guarded by mutex_
  std::vector<Any> draining_;  // touched only with the pipeline held
  std::atomic<bool> waiting_{false};
  std::atomic<std::uint64_t> deferred_{0};
};

}  // namespace pasta::detail
