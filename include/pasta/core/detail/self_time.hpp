// PASTA_SELF_TIME: how long pasta's own callbacks take. A handler keeps one
// SelfTime per kind of callback and opens a SelfTimer at each call's entry:
// two clock reads when on, one branch when off. The handler says the sums
// at exit (describe_self_time), so the cost of profiling can be split
// between pasta's work on the program's threads and on its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include <pasta/core/detail/thread.hpp>

namespace pasta::detail {

struct SelfTime {
  std::atomic<std::uint64_t> ns{0};
  std::atomic<std::uint64_t> calls{0};
};

// Adds the time from its construction to its destruction to `t` (nullptr: off).
class SelfTimer {
 public:
  explicit SelfTimer(SelfTime* t) : t_(t), start_(t ? steady_ns() : 0) {}
  ~SelfTimer() {
    if (!t_) return;
    t_->ns.fetch_add(steady_ns() - start_, std::memory_order_relaxed);
    t_->calls.fetch_add(1, std::memory_order_relaxed);
  }
  SelfTimer(const SelfTimer&) = delete;
  SelfTimer& operator=(const SelfTimer&) = delete;

 private:
  SelfTime* t_;
  std::uint64_t start_;
};

// "WHAT: N calls, X ms in all, Y ns each".
inline std::string describe_self_time(std::string_view what, const SelfTime& t) {
  const std::uint64_t ns = t.ns.load(), calls = t.calls.load();
  std::string line(what);
  line += ": " + std::to_string(calls) + " calls, " + std::to_string(ns / 1000000) + "." +
          std::to_string(ns / 100000 % 10) + " ms in all, " +
          std::to_string(calls ? ns / calls : 0) + " ns each";
  return line;
}

}  // namespace pasta::detail
