// Definitions for core/detail/exit_guard.hpp: inline in header-only builds,
// compiled once otherwise (core/detail/api.hpp).
#pragma once

#include <semaphore.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include <pasta/core/detail/exit_guard.hpp>

namespace pasta::detail {

class ExitGuard {
 public:
  using StopFn = ExitStopFn;

  static ExitGuard& get() {
    static ExitGuard* g = new ExitGuard;  // never destroyed: used during exit
    return *g;
  }

  void add(void* self, StopFn stop) {
    std::lock_guard lock(mutex_);
    live_.push_back({self, stop});
    std::call_once(installed_, [this] { install(); });
  }
  void remove(void* self) {
    std::lock_guard lock(mutex_);
    std::erase_if(live_, [&](const Entry& e) { return e.self == self; });
  }

  // Stops every live profiler; `why` empty for a normal end.
  void stop_all(const std::string& why) {
    std::vector<Entry> live;
    {
      std::lock_guard lock(mutex_);
      live.swap(live_);
    }
    for (const Entry& e : live) e.stop(e.self, why);
  }

 private:
  struct Entry {
    void* self;
    StopFn stop;
  };
  static constexpr int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGABRT};

  ExitGuard() = default;

  void install() {
    std::atexit([] { get().stop_all({}); });
    previous_terminate_ = std::set_terminate(&on_terminate);
    ::sem_init(&request_, 0, 0);
    ::sem_init(&done_, 0, 0);
    bool any = false;
    for (int sig : signals) {
      struct sigaction now {};
      if (::sigaction(sig, nullptr, &now) != 0 || now.sa_handler != SIG_DFL) continue;
      struct sigaction ours {};
      ours.sa_handler = &on_signal;
      sigemptyset(&ours.sa_mask);
      ours.sa_flags = SA_RESETHAND;  // a second signal ends the program at once
      any |= ::sigaction(sig, &ours, nullptr) == 0;
    }
    if (any)
      std::thread([this] {
        // The signals go to the program's threads, never to this one, which
        // the handler waits for.
        sigset_t block;
        sigemptyset(&block);
        for (int sig : signals) sigaddset(&block, sig);
        ::pthread_sigmask(SIG_BLOCK, &block, nullptr);
        for (;;) {
          while (::sem_wait(&request_) != 0) {
          }
          stop_all(reason());
          ::sem_post(&done_);
        }
      }).detach();
  }

  std::string reason() const {
    const int sig = signal_.load();
    if (sig == SIGABRT && terminate_.load())
      return "the program ended with an uncaught exception" +
             std::string(what_[0] ? std::string(": ") + what_ : std::string());
    switch (sig) {
      case SIGINT: return "the program was interrupted (SIGINT)";
      case SIGTERM: return "the program was terminated (SIGTERM)";
      case SIGHUP: return "the program's terminal went away (SIGHUP)";
      case SIGABRT: return "the program aborted (SIGABRT)";
      default: return "the program was stopped by a signal";
    }
  }

  static void on_signal(int sig) {
    ExitGuard& g = get();
    int expected = 0;
    if (g.signal_.compare_exchange_strong(expected, sig)) {
      ::sem_post(&g.request_);
      timespec until{};
      ::clock_gettime(CLOCK_REALTIME, &until);
      until.tv_sec += 10;
      while (::sem_timedwait(&g.done_, &until) != 0 && errno == EINTR) {
      }
    }
    ::signal(sig, SIG_DFL);  // already reset (SA_RESETHAND); kept explicit
    ::raise(sig);
  }

  // Keeps the exception's text for the reason, then lets the runtime abort.
  static void on_terminate() {
    ExitGuard& g = get();
    g.terminate_ = true;
    if (auto e = std::current_exception()) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        const char* w = ex.what();
        std::size_t i = 0;
        for (; w && w[i] && i + 1 < sizeof g.what_; ++i) g.what_[i] = w[i];
        g.what_[i] = '\0';
      } catch (...) {
      }
    }
    if (g.previous_terminate_) g.previous_terminate_();
    std::abort();
  }

  std::mutex mutex_;
  std::vector<Entry> live_;
  std::once_flag installed_;
  std::terminate_handler previous_terminate_ = nullptr;
  sem_t request_{}, done_{};
  std::atomic<int> signal_{0};
  std::atomic<bool> terminate_{false};
  char what_[256] = {};
};

PASTA_FUNC void exit_guard_add(void* self, ExitStopFn stop) { ExitGuard::get().add(self, stop); }
PASTA_FUNC void exit_guard_remove(void* self) { ExitGuard::get().remove(self); }

}  // namespace pasta::detail
