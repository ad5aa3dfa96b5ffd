// User replay's pieces for RangeCounters: the program's kernel launched
// again from its driver call's parameters, CUPTI's kernel records off while
// pasta replays, and the thread that makes every range-profiler call.
#pragma once

#include <cupti_activity.h>

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include <pasta/nv/detail/cupti_api.hpp>
#include <pasta/nv/detail/driver.hpp>
#include <pasta/nv/counters/range_profiler.hpp>

namespace pasta::nv::detail {

// The driver call of a launch (its CUPTI callback's parameters).
enum class LaunchCall { kernel, kernel_ex, cooperative };
struct DriverLaunch {
  LaunchCall call;
  const void* params;
};

// Inside a replay's own thread: its API calls and their records are pasta's.
inline bool& replaying() {
  thread_local bool on = false;
  return on;
}

// The kernel launched again as the program's driver call launched it, on `stream`.
inline CUresult relaunch(Driver& driver, const DriverLaunch& l, CUstream stream) {
  using Call = LaunchCall;
  switch (l.call) {
    case Call::kernel: {
      const auto& p = *static_cast<const DriverLaunchParams*>(l.params);
      return driver.launch(p.f, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY,
                           p.blockDimZ, p.sharedMemBytes, stream, p.kernelParams, p.extra);
    }
    case Call::cooperative: {
      const auto& p = *static_cast<const DriverLaunchParams*>(l.params);
      return driver.launch_cooperative(p.f, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX,
                                       p.blockDimY, p.blockDimZ, p.sharedMemBytes, stream,
                                       p.kernelParams);
    }
    case Call::kernel_ex: {
      const auto& p = *static_cast<const DriverLaunchExParams*>(l.params);
      CUlaunchConfig config = *p.config;
      config.hStream = stream;
      return driver.launch_ex(&config, p.f, p.kernelParams, p.extra);
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

// CUPTI's kernel activity records off for a scope (if the handler has them on).
struct KernelRecordsOff {
  bool on;
  KernelRecordsOff(bool records, Driver& driver) : on(records) {
    if (!on) return;
    driver.call(driver.ctx_synchronize(), "waiting for the program's work before a replay");
    RangeProfiler::check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                         "turning kernel records off for a replay");
  }
  ~KernelRecordsOff() {
    if (on) (void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  }
  KernelRecordsOff(const KernelRecordsOff&) = delete;
  KernelRecordsOff& operator=(const KernelRecordsOff&) = delete;
};

// The thread that makes every range-profiler call under user replay, with
// the measured context current: run() hands it a job and waits for it.
class ReplayWorker {
 public:
  ReplayWorker() = default;
  ReplayWorker(const ReplayWorker&) = delete;
  ReplayWorker& operator=(const ReplayWorker&) = delete;
  ~ReplayWorker() { stop(); }
  bool started() const { return thread_.joinable(); }
  // Runs `job` on the worker (started at the first call) and waits;
  // rethrows what it threw.
  template <class F>
  void run(F&& job) {
    std::function<void()> f = std::forward<F>(job);
    if (!started())
      thread_ = std::thread([this] {
        replaying() = true;  // its API calls are pasta's
        loop();
      });
    std::unique_lock lock(mutex_);
    job_ = &f;
    error_ = nullptr;
    wake_.notify_all();
    wake_.wait(lock, [&] { return job_ == nullptr; });
    if (error_) std::rethrow_exception(error_);
  }
  void stop() {
    if (!started()) return;
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
      wake_.notify_all();
    }
    thread_.join();
    quit_ = false;
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return job_ != nullptr || quit_; });
      if (job_) {
        try {
          (*job_)();
        } catch (...) {
          error_ = std::current_exception();
        }
        job_ = nullptr;
        wake_.notify_all();
      } else if (quit_) {
        return;
      }
    }
  }
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::function<void()>* job_ = nullptr;
  std::exception_ptr error_;
  bool quit_ = false;
};

}  // namespace pasta::nv::detail
