// User replay's pieces for RangeCounters: the program's kernel launched
// again from its driver call's parameters, CUPTI's kernel records off while
// pasta replays, and the thread that makes every range-profiler call.
#pragma once

#include <cupti_activity.h>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>
#include <pasta/nv/counters/range_profiler.hpp>
#include <pasta/nv/detail/cupti_api.hpp>
#include <pasta/nv/detail/driver.hpp>

namespace pasta::nv::detail {

// The driver call of a launch (its CUPTI callback's parameters).
enum class LaunchCall { kernel, kernel_ex, cooperative };
struct DriverLaunch {
  LaunchCall call;
  const void* params;
};

// The function (or CUkernel) a launch's driver call names.
inline CUfunction launch_function(const DriverLaunch& l) {
  return l.call == LaunchCall::kernel_ex ? static_cast<const DriverLaunchExParams*>(l.params)->f
                                         : static_cast<const DriverLaunchParams*>(l.params)->f;
}

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

// A launch kept to be launched again after its driver call returned (a
// batch of launches is replayed together, later): the kernel, its shape and
// launch attributes, and a copy of its argument bytes, since the call's own
// parameters point into the caller's frame. The arguments' sizes come from
// the driver (cuFuncGetParamInfo), or from the `extra` buffer a launch
// passes instead. A borrowed launch (borrow()) uses the call's parameters:
// only until the call returns.
class KeptLaunch {
 public:
  // The launch kept, or nullopt when its arguments cannot be copied (`why`
  // then says why): a driver without cuFuncGetParamInfo, a function it
  // refuses, an `extra` array of entries other than a buffer and its size.
  static std::optional<KeptLaunch> keep(const Driver& driver, const DriverLaunch& l,
                                        std::string& why) {
    KeptLaunch k;
    k.d_ = std::make_unique<Data>();
    k.d_->call = l.call;
    void** args = nullptr;
    void** extra = nullptr;
    if (l.call == LaunchCall::kernel_ex) {
      const auto& p = *static_cast<const DriverLaunchExParams*>(l.params);
      k.d_->config = *p.config;
      if (p.config->attrs && p.config->numAttrs)
        k.d_->attrs.assign(p.config->attrs, p.config->attrs + p.config->numAttrs);
      k.d_->ex = {&k.d_->config, p.f, nullptr, nullptr};
      args = p.kernelParams;
      extra = p.extra;
    } else {
      k.d_->plain = *static_cast<const DriverLaunchParams*>(l.params);
      args = static_cast<const DriverLaunchParams*>(l.params)->kernelParams;
      extra = static_cast<const DriverLaunchParams*>(l.params)->extra;
    }
    const bool copied = args ? k.copy_args(driver, args, why) : !extra || k.copy_extra(extra, why);
    if (!copied) return std::nullopt;
    k.keep_shared_limit(driver);
    // The call's parameters, pointing into the copies (on the heap, where they stay).
    Data& d = *k.d_;
    void** kept_args = d.args.empty() ? nullptr : d.args.data();
    void** kept_extra = d.extra_size ? d.extra : nullptr;
    d.config.attrs = d.attrs.empty() ? nullptr : d.attrs.data();
    d.ex.kernelParams = d.plain.kernelParams = kept_args;
    d.ex.extra = d.plain.extra = kept_extra;
    return k;
  }
  // The call's own launch, to launch again before the call returns.
  static KeptLaunch borrow(const DriverLaunch& l) {
    KeptLaunch k;
    k.borrowed_ = l;
    return k;
  }

  // The kernel launched again on `stream`, with the dynamic shared memory
  // limit its launch had (put back after, if the program has changed it
  // since: cuDNN sets it before each launch of a kernel, so a later, smaller
  // launch lowers it under what an earlier one needs).
  CUresult launch(Driver& driver, CUstream stream) const {
    if (borrowed_) return relaunch(driver, *borrowed_, stream);
    const void* params =
        d_->call == LaunchCall::kernel_ex ? static_cast<const void*>(&d_->ex) : &d_->plain;
    int now = d_->shared_limit;
    if (d_->shared_limit >= 0 && read_limit(driver, now) == CUDA_SUCCESS &&
        now != d_->shared_limit)
      write_limit(driver, d_->shared_limit);
    const CUresult r = relaunch(driver, {d_->call, params}, stream);
    if (now != d_->shared_limit) write_limit(driver, now);
    return r;
  }
  bool borrowed() const { return borrowed_.has_value(); }

  // What was kept, for a log line: the kernel's name (where the driver
  // gives it), the call, and the arguments copied.
  std::string describe(const Driver& driver) const {
    if (borrowed_) return "a launch replayed from its own call";
    const char* name = nullptr;
    const CUfunction f = function();
    if (d_->kernel_handle && driver.kernel_name)
      driver.kernel_name(&name, reinterpret_cast<CUkernel>(f));
    else if (!d_->kernel_handle && driver.function_name)
      driver.function_name(&name, f);
    const char* call = d_->call == LaunchCall::kernel_ex     ? "cuLaunchKernelEx"
                       : d_->call == LaunchCall::cooperative ? "cuLaunchCooperativeKernel"
                                                             : "cuLaunchKernel";
    return fmt::format("{} ({}, {} launch attributes, {}, {} bytes)", name ? name : "a kernel", call,
                       d_->attrs.size(),
                       d_->extra_size ? std::string("an `extra` buffer")
                                      : fmt::format("{} parameters", d_->args.size()),
                       d_->used);
  }

 private:
  KeptLaunch() = default;

  CUfunction function() const {
    return d_->call == LaunchCall::kernel_ex ? d_->ex.f : d_->plain.f;
  }
  static constexpr CUfunction_attribute limit_attribute =
      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
  // The function's dynamic shared memory limit as the launch has it, for a
  // launch that asks for dynamic shared memory (none where the driver will
  // not say). A CUkernel's (the handle the runtime launches with) is read
  // and set for the launch's device, where cudaFuncSetAttribute sets it;
  // never through the CUkernel's function in the context: a limit set there
  // overrides the CUkernel's from then on, whatever the program sets after,
  // and the program's next launch that needs more is refused
  // (bench/gpu/probe/shared_limit.cu, on an H200).
  void keep_shared_limit(const Driver& driver) {
    const unsigned shared = d_->call == LaunchCall::kernel_ex ? d_->config.sharedMemBytes
                                                              : d_->plain.sharedMemBytes;
    if (!shared) return;
    if (d_->kernel_handle &&
        (!driver.ctx_get_device || driver.ctx_get_device(&d_->device) != CUDA_SUCCESS))
      return;
    int limit = 0;
    if (read_limit(driver, limit) == CUDA_SUCCESS) d_->shared_limit = limit;
  }
  CUresult read_limit(const Driver& driver, int& limit) const {
    if (d_->kernel_handle)
      return driver.kernel_attribute && driver.set_kernel_attribute
                 ? driver.kernel_attribute(&limit, limit_attribute, kernel(), d_->device)
                 : CUDA_ERROR_NOT_SUPPORTED;
    return driver.function_attribute && driver.set_function_attribute
               ? driver.function_attribute(&limit, limit_attribute, function())
               : CUDA_ERROR_NOT_SUPPORTED;
  }
  void write_limit(const Driver& driver, int limit) const {
    if (d_->kernel_handle)
      driver.set_kernel_attribute(limit_attribute, limit, kernel(), d_->device);
    else
      driver.set_function_attribute(function(), limit_attribute, limit);
  }
  CUkernel kernel() const { return reinterpret_cast<CUkernel>(function()); }

  bool copy_args(const Driver& driver, void** args, std::string& why) {
    if (!driver.param_info || !driver.kernel_param_info || !driver.function_load) {
      why = "the driver has no cuFuncGetParamInfo (CUDA 12.4 and later)";
      return false;
    }
    const CUfunction f = function();
    // A function is loaded first (a lazily loaded one is not, before its
    // first launch runs); a handle cuFuncLoad does not know is a CUkernel.
    const CUresult loaded = driver.function_load(f);
    const bool kernel = d_->kernel_handle = loaded == CUDA_ERROR_INVALID_HANDLE;
    if (loaded != CUDA_SUCCESS && !kernel) {
      why = "cuFuncLoad: " + driver.name(loaded);
      return false;
    }
    std::vector<std::pair<std::size_t, std::size_t>> at;  // offset, size
    std::size_t end = 0;
    for (std::size_t i = 0;; ++i) {
      std::size_t offset = 0, size = 0;
      const CUresult r =
          kernel ? driver.kernel_param_info(reinterpret_cast<CUkernel>(f), i, &offset, &size)
                 : driver.param_info(f, i, &offset, &size);
      if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
      if (r != CUDA_SUCCESS || i > 4096) {
        why = fmt::format("{}: {}", kernel ? "cuKernelGetParamInfo" : "cuFuncGetParamInfo",
                          driver.name(r));
        return false;
      }
      at.emplace_back(offset, size);
      end = std::max(end, offset + size);
    }
    d_->used = end;
    d_->bytes.resize((end + sizeof(Chunk) - 1) / sizeof(Chunk));
    auto* base = reinterpret_cast<unsigned char*>(d_->bytes.data());
    for (std::size_t i = 0; i < at.size(); ++i) {
      std::memcpy(base + at[i].first, args[i], at[i].second);
      d_->args.push_back(base + at[i].first);
    }
    return true;
  }
  bool copy_extra(void** extra, std::string& why) {
    const void* buffer = nullptr;
    std::size_t size = 0;
    bool sized = false;
    for (std::size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        buffer = extra[i + 1];
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        size = *static_cast<const std::size_t*>(extra[i + 1]);
        sized = true;
      } else {
        why = "a launch's `extra` array holds more than a parameter buffer and its size";
        return false;
      }
      if (i > 64) {
        why = "a launch's `extra` array has no end";
        return false;
      }
    }
    if (!buffer || !sized) {
      why = "a launch's `extra` array lacks the parameter buffer or its size";
      return false;
    }
    d_->used = size;
    d_->bytes.resize((size + sizeof(Chunk) - 1) / sizeof(Chunk));
    std::memcpy(d_->bytes.data(), buffer, size);
    d_->extra_size = size;
    d_->extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
    d_->extra[1] = d_->bytes.data();
    d_->extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
    d_->extra[3] = &d_->extra_size;
    d_->extra[4] = CU_LAUNCH_PARAM_END;
    return true;
  }

  // Argument storage aligned for any parameter type: a CUtensorMap (a TMA
  // descriptor passed by value, as Hopper GEMM and convolution kernels take
  // them) is alignas(64), alignas(128) in CUDA 13, and each parameter lies
  // at its own offset from the storage's start.
  struct alignas(128) Chunk {
    unsigned char b[128];
  };
  // On the heap: args and extra point into it, so a KeptLaunch moves freely
  // (none for a borrowed launch).
  struct Data {
    LaunchCall call = LaunchCall::kernel;
    DriverLaunchParams plain{};
    CUlaunchConfig config{};
    std::vector<CUlaunchAttribute> attrs;
    DriverLaunchExParams ex{};
    std::vector<Chunk> bytes;
    std::size_t used = 0;  // the argument bytes in `bytes`
    std::vector<void*> args;
    std::size_t extra_size = 0;
    void* extra[5] = {};
    bool kernel_handle = false;  // the launch's handle is a CUkernel (cuFuncLoad refused it)
    // keep_shared_limit()'s: the launch's device (for a CUkernel's limit),
    // and the dynamic shared memory limit then (-1: not kept).
    CUdevice device = 0;
    int shared_limit = -1;
  };
  std::unique_ptr<Data> d_;
  std::optional<DriverLaunch> borrowed_;
};

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
