// Host-side identity and time: the OS thread id and the clock that host
// events are stamped with (a handler may install its own, e.g. CUPTI's, so
// host and device times share one axis).
#pragma once

#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

// A thread-local variable on the hot path, in the initial-exec TLS model.
//
// `pasta run`'s libraries are opened with dlopen (the CUDA driver opens
// CUDA_INJECTION64_PATH), where a `thread_local` of the default model costs a
// call of __tls_get_addr at each access site, and two where it has a
// constructor (its guard): 13 calls at each PyTorch operator start, measured
// (bench/aten_ops.py --misses). In the initial-exec model an access is one
// load from the thread pointer. A library that has such a variable takes its
// whole TLS block from the static TLS that glibc keeps spare for libraries
// opened later (about 1.5 KB, shared with every such library:
// libpasta_torch.so's block is 216 bytes, PyTorch's libgomp's 120), so the
// variables are words: a pointer to the thread's object (ThreadSlot below), a
// counter, an id.
#define PASTA_FAST_TLS __attribute__((tls_model("initial-exec")))

namespace pasta::detail {

// The OS thread id, read once per thread (0: not read yet; no thread has it).
inline std::uint32_t thread_id() {
  static thread_local std::uint32_t id PASTA_FAST_TLS = 0;
  if (id == 0) [[unlikely]]
    id = static_cast<std::uint32_t>(::syscall(SYS_gettid));
  return id;
}

// ThreadSlot<T>::get(): the calling thread's T, made at its first use (T
// default-constructed) and reached after that through one initial-exec
// pointer. It is destroyed at the thread's exit by a pthread key's destructor,
// which runs after the thread's C++ thread_local destructors, so those still
// find it; one made again by a later key destructor is destroyed in the next
// round. The main thread's is never destroyed (no key destructor runs at
// exit()): what a tool reads at exit stays valid. The library that made a key
// stays loaded (RTLD_NODELETE), so that no destructor outlives its code.
template <class T>
class ThreadSlot {
 public:
  static T& get() {
    T* t = mine_;
    if (t) [[likely]]
      return *t;
    return make();
  }

 private:
  static inline thread_local T* mine_ PASTA_FAST_TLS = nullptr;

  [[gnu::noinline, gnu::cold]] static T& make() {
    static const pthread_key_t key = [] {
      pthread_key_t k{};
      if (::pthread_key_create(&k, &destroy) != 0) return pthread_key_t(-1);
      Dl_info self{};
      if (::dladdr(reinterpret_cast<void*>(&destroy), &self) && self.dli_fname)
        (void)::dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
      return k;
    }();
    T* t = new T();
    // No key (the process ran out of them): the object lives as long as the process.
    if (key != pthread_key_t(-1)) (void)::pthread_setspecific(key, t);
    mine_ = t;
    return *t;
  }
  static void destroy(void* p) {
    mine_ = nullptr;
    delete static_cast<T*>(p);
  }
};

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
