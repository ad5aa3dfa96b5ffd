// Host-side identity and time: the OS thread id and the clock that host
// events are stamped with (a handler may install its own, e.g. CUPTI's, so
// host and device times share one axis).
#pragma once

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace pasta::detail {

inline std::uint32_t thread_id() {
  thread_local const auto id = static_cast<std::uint32_t>(::syscall(SYS_gettid));
  return id;
}

using ClockFn = std::uint64_t (*)();

// CLOCK_MONOTONIC, as std::chrono::steady_clock reads it on Linux, without
// <chrono> (which brings <sstream> and the locales into every unit).
inline std::uint64_t steady_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(t.tv_nsec);
}

inline std::atomic<ClockFn>& clock_source() {
  static std::atomic<ClockFn> source{&steady_ns};
  return source;
}

inline std::uint64_t now_ns() { return clock_source().load(std::memory_order_relaxed)(); }

// Installs `fn` as the host clock (nullptr restores the steady clock).
inline void set_clock(ClockFn fn) { clock_source().store(fn ? fn : &steady_ns); }

}  // namespace pasta::detail
