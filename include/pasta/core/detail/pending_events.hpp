// Events of program threads queued instead of processed on those threads:
// when the pipeline is busy (pasta's worker is processing a buffer of device
// records), or always where a handler's thread drains the queue. Processed
// in the order they came, by the next thread that takes the pipeline, before
// its own event. Bounded: a full queue makes the emitter wait as before.
//
// A ring of slots that any thread fills and one thread at a time (the one
// holding the pipeline) empties, each slot with a sequence number that says
// whose turn it is (D. Vyukov's bounded queue): a push takes a ticket with
// one compare-and-swap and publishes the slot with one release store, with
// no lock and nothing else shared, since an operator's start and end and
// each allocation report are pushed from the program's threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <type_traits>

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

  // Slots: 32,768 of 128 bytes (4 MiB), about three steps of a model's
  // operator events between the worker's drains, which come every few ms.
  static constexpr std::size_t limit = std::size_t{1} << 15;

  PendingEvents() : slots_(new Slot[limit]) {
    for (std::size_t i = 0; i < limit; ++i) slots_[i].turn.store(i, std::memory_order_relaxed);
  }
  PendingEvents(const PendingEvents&) = delete;
  PendingEvents& operator=(const PendingEvents&) = delete;

  // Queues e; false when the queue is full (the caller then waits its turn).
  template <class E>
  bool push(const E& e) {
    static_assert(holds<E>, "only the events traces carry are queued");
    std::uint64_t ticket = tail_.load(std::memory_order_relaxed);
    for (;;) {
      Slot& s = slots_[ticket & (limit - 1)];
      const std::uint64_t turn = s.turn.load(std::memory_order_acquire);
      if (turn == ticket) {  // free for this ticket: take it
        if (tail_.compare_exchange_weak(ticket, ticket + 1, std::memory_order_relaxed)) {
          s.kind = E::kind;
          std::memcpy(s.bytes, &e, sizeof(E));
          s.turn.store(ticket + 1, std::memory_order_release);  // ready to drain
          return true;
        }
      } else if (turn < ticket) {
        return false;  // still holds the event of a lap ago: full
      } else {
        ticket = tail_.load(std::memory_order_relaxed);  // another thread took it
      }
    }
  }

  // f(event) for each event queued before the call, oldest first: a slot a
  // push has taken but not yet filled is waited for (a copy of at most
  // max_bytes), so a thread that queued an event and then takes the
  // pipeline sees it processed before its next one. Call with the pipeline
  // held (one drainer at a time).
  template <class F>
  void drain(F&& f) {
    const std::uint64_t end = tail_.load(std::memory_order_acquire);
    while (head_ < end) {
      Slot& s = slots_[head_ & (limit - 1)];
      for (int spins = 0; s.turn.load(std::memory_order_acquire) != head_ + 1; ++spins)
        if (spins > 64) std::this_thread::yield();  // its pusher was descheduled
      const EventKind kind = s.kind;
      bool done = false;
      for_each_type(all_events, [&](auto type) {
        using E = typename decltype(type)::type;
        if (done || kind != E::kind) return;
        done = true;
        E e;  // events are trivially copyable (the Event concept)
        std::memcpy(&e, s.bytes, sizeof(E));
        // The slot is free for the next lap's push before f runs (which
        // may throw): nothing is processed twice.
        release(s);
        f(e);
      });
      if (!done) release(s);  // a kind no event has: cannot be, but never stuck
    }
  }

  // Events queued so far.
  std::uint64_t deferred() const { return tail_.load(std::memory_order_relaxed); }

 private:
  // An event as its bytes and its kind: what a std::variant of every event
  // type would hold, without instantiating one in every unit.
  static constexpr std::size_t max_bytes = [] {
    std::size_t n = 0;
    for_each_type(all_events,
                  [&](auto type) { n = std::max(n, sizeof(typename decltype(type)::type)); });
    return n;
  }();
  struct Slot {
    // ticket: free for the push of that ticket; ticket + 1: filled, to drain.
    std::atomic<std::uint64_t> turn{0};
    EventKind kind{};
    alignas(std::max_align_t) unsigned char bytes[max_bytes];
  };

  void release(Slot& s) {
    s.turn.store(head_ + limit, std::memory_order_release);
    ++head_;
  }

  std::unique_ptr<Slot[]> slots_;
  alignas(64) std::atomic<std::uint64_t> tail_{0};  // the next push's ticket
  alignas(64) std::uint64_t head_ = 0;              // the next slot to drain (the drainer's)
};

}  // namespace pasta::detail
