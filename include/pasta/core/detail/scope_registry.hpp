// The profilers that receive scope events, and entering and leaving scopes
// on a thread: what core/scope.hpp's client calls reach, and what
// handlers that turn the program's own ranges (NVTX, ROCTx) into scopes call.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <shared_mutex>
#include <vector>

// NVTX itself is included where the scope code is defined (scope_impl.hpp):
// a compiled build's units parse none of it.
#if !defined(PASTA_NO_NVTX) && __has_include(<nvtx3/nvToolsExt.h>)
#define PASTA_DETAIL_NVTX 1
#endif

#include <pasta/core/detail/api.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/scope.hpp>

namespace pasta::detail {

// A profiler that wants scope events registers a pair of trampolines.
struct ScopeListener {
  void* self = nullptr;
  void (*begin)(void* self, const ScopeBegin&) = nullptr;
  void (*end)(void* self, const ScopeEnd&) = nullptr;
};

class ScopeRegistry {
 public:
  void add(ScopeListener l) {
    std::unique_lock lock(mutex_);
    listeners_.push_back(l);
    count_.store(listeners_.size(), std::memory_order_release);
  }
  void remove(void* self) {
    std::unique_lock lock(mutex_);
    std::erase_if(listeners_, [&](const ScopeListener& l) { return l.self == self; });
    count_.store(listeners_.size(), std::memory_order_release);
  }
  bool empty() const { return count_.load(std::memory_order_acquire) == 0; }

  void emit(const ScopeBegin& e) {
    std::shared_lock lock(mutex_);
    for (const auto& l : listeners_) l.begin(l.self, e);
  }
  void emit(const ScopeEnd& e) {
    std::shared_lock lock(mutex_);
    for (const auto& l : listeners_) l.end(l.self, e);
  }

 private:
  std::shared_mutex mutex_;
  std::vector<ScopeListener> listeners_;
  std::atomic<std::size_t> count_{0};
};

PASTA_FUNC ScopeRegistry& scope_registry();

#ifdef PASTA_DETAIL_NVTX
// pasta's own ranges go to an NVTX domain of their own, so that a handler
// turning the program's NVTX ranges into scopes can tell the two apart. Its
// nvtxDomainHandle_t, as void* so that declaring it needs no NVTX header.
PASTA_FUNC void* nvtx_domain();
#endif

// Enters a scope on this thread: its scope stack, every live profiler and,
// when `nvtx`, an NVTX range. Handlers that see the program's own NVTX
// ranges enter them here with nvtx = false.
PASTA_FUNC void scope_enter(NameId id, bool nvtx);

// Leaves the innermost scope of this thread; false if there is none.
PASTA_FUNC bool scope_exit(bool nvtx);

}  // namespace pasta::detail

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/core/detail/scope_impl.hpp>
#endif
