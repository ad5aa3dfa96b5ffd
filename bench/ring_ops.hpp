// The floor an operator profiler's callbacks can reach, for bench/aten_ops.cpp
// (variant ring-callback) and libpasta_bench_ring_ops.so (bench/gpu's
// default-detach-ring variant): a global RecordFunction callback, the scopes
// torch::Aten watches, that writes what issue 55 asks of an operator record
// and nothing more. The start takes an id and writes (id, time, the name's
// pointer, the thread) to a ring of the calling thread; the end writes its
// time, matched to its start afterwards by nesting; no context is made.
// Nothing reads the rings: a benchmark, not a profiler.
#pragma once

#include <ATen/record_function.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <ctime>
#include <memory>

namespace pasta_bench::ring {

struct Record {
  std::uint64_t id;  // 0: an operator's end
  std::uint64_t time_ns;
  const char* name;
  std::uint64_t thread;
};
static_assert(sizeof(Record) == 32);

struct Ring {
  static constexpr std::uint64_t size = 1 << 15;  // 1 MiB a thread, overwritten in turn
  std::uint64_t written = 0;
  std::uint64_t thread = static_cast<std::uint64_t>(::pthread_self());
  Record slots[size];
};

inline std::atomic<std::uint64_t>& next_id() {
  static std::atomic<std::uint64_t> id{1};
  return id;
}

inline Ring& ring() {
  thread_local std::unique_ptr<Ring> r = std::make_unique<Ring>();
  return *r;
}

inline std::uint64_t now_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(t.tv_nsec);
}

inline void write(std::uint64_t id, const char* name) {
  Ring& r = ring();
  r.slots[r.written++ & (Ring::size - 1)] = {id, now_ns(), name, r.thread};
}

inline std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  write(next_id().fetch_add(1, std::memory_order_relaxed), fn.name());
  return nullptr;
}
inline void on_end(const at::RecordFunction&, at::ObserverContext*) { write(0, nullptr); }

// A callback that does nothing: what RecordFunction's own path costs (the
// count of starts is still kept, to check that the callback ran).
inline std::unique_ptr<at::ObserverContext> on_start_empty(const at::RecordFunction&) {
  next_id().fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}
inline void on_end_empty(const at::RecordFunction&, at::ObserverContext*) {}

// Adds the callback (the record's, or with `empty` the one that does
// nothing); returns its handle, for at::removeCallback.
inline at::CallbackHandle add(bool empty = false) {
  return at::addGlobalCallback(
      at::RecordFunctionCallback(empty ? &on_start_empty : &on_start,
                                 empty ? &on_end_empty : &on_end)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                   at::RecordScope::USER_SCOPE}));
}

// Operator starts recorded so far.
inline std::uint64_t starts() { return next_id().load() - 1; }

}  // namespace pasta_bench::ring
