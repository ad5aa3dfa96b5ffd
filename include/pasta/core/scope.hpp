// Regions marked by the program: PASTA_SCOPE("name") for a block,
// pasta::start("name") / pasta::end() across calls. Each region becomes
// ScopeBegin/ScopeEnd events for every live profiler and an NVTX range for
// Nsight. With PASTA_DISABLE defined, all of it compiles to nothing.
#pragma once

#include <string_view>

#define PASTA_DETAIL_CAT2(a, b) a##b
#define PASTA_DETAIL_CAT(a, b) PASTA_DETAIL_CAT2(a, b)

#ifdef PASTA_DISABLE

namespace pasta {
// A different inline namespace than the enabled build, so that translation
// units built with and without PASTA_DISABLE can share one program.
inline namespace scopes_disabled {
inline void start(std::string_view) {}
inline void end() {}
struct Scope {
  explicit Scope(std::string_view) {}
};
}  // namespace scopes_disabled
}  // namespace pasta

#define PASTA_SCOPE(name) static_assert(true, "")

#else

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <vector>

#if !defined(PASTA_NO_NVTX) && __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define PASTA_DETAIL_NVTX 1
#endif

#include <pasta/core/detail/thread.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/names.hpp>

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

inline ScopeRegistry& scope_registry() {
  static ScopeRegistry* registry = [] {
#ifdef PASTA_DETAIL_NVTX
    // NVTX initialises itself on first use without a lock; doing it here,
    // when the first profiler starts, keeps that out of the threads' way.
    nvtxInitialize(nullptr);
#endif
    return new ScopeRegistry;  // never destroyed: used from static destructors
  }();
  return *registry;
}

inline std::vector<NameId>& scope_stack() {
  thread_local std::vector<NameId> stack;
  return stack;
}

#ifdef PASTA_DETAIL_NVTX
// pasta's own ranges go to an NVTX domain of their own, so that a handler
// turning the program's NVTX ranges into scopes can tell the two apart.
inline nvtxDomainHandle_t nvtx_domain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("pasta");
  return domain;
}
#endif

// Enters a scope on this thread: its scope stack, every live profiler and,
// when `nvtx`, an NVTX range. Handlers that see the program's own NVTX
// ranges enter them here with nvtx = false.
inline void scope_enter(NameId id, bool nvtx) {
  auto& registry = scope_registry();  // first: it initialises NVTX once
  auto& stack = scope_stack();
  const ScopeBegin e{.name = id,
                     .thread = thread_id(),
                     .depth = static_cast<std::uint32_t>(stack.size()),
                     .time_ns = now_ns()};
  stack.push_back(id);
#ifdef PASTA_DETAIL_NVTX
  if (nvtx) {
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name_of(id).data();  // interned strings are NUL-terminated
    nvtxDomainRangePushEx(nvtx_domain(), &a);
  }
#else
  (void)nvtx;
#endif
  if (!registry.empty()) registry.emit(e);
}

// Leaves the innermost scope of this thread; false if there is none.
inline bool scope_exit(bool nvtx) {
  auto& stack = scope_stack();
  if (stack.empty()) return false;
  const NameId id = stack.back();
  stack.pop_back();
#ifdef PASTA_DETAIL_NVTX
  if (nvtx) nvtxDomainRangePop(nvtx_domain());
#else
  (void)nvtx;
#endif
  auto& registry = scope_registry();
  if (!registry.empty())
    registry.emit(ScopeEnd{.name = id,
                           .thread = thread_id(),
                           .depth = static_cast<std::uint32_t>(stack.size()),
                           .time_ns = now_ns()});
  return true;
}

}  // namespace pasta::detail

namespace pasta {
inline namespace scopes_enabled {

inline void start(std::string_view name) { detail::scope_enter(intern(name), true); }

inline void end() {
  if (!detail::scope_exit(true))
    detail::log_once("scope:unbalanced", "pasta::end() without a matching pasta::start(); ignored");
}

class Scope {
 public:
  explicit Scope(std::string_view name) { start(name); }
  ~Scope() { end(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};

}  // namespace scopes_enabled
}  // namespace pasta

#define PASTA_SCOPE(name) const ::pasta::Scope PASTA_DETAIL_CAT(pasta_scope_, __LINE__)(name)

#endif  // PASTA_DISABLE
