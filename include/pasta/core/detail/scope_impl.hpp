// Definitions for core/scope.hpp and core/detail/scope_registry.hpp: inline
// in header-only builds, compiled once otherwise (core/detail/api.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include <pasta/core/detail/scope_registry.hpp>
#ifdef PASTA_DETAIL_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#include <pasta/core/detail/capture_window.hpp>
#include <pasta/core/detail/thread.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/names.hpp>

namespace pasta::detail {

PASTA_FUNC ScopeRegistry& scope_registry() {
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

// A thread's open scopes; `emitted`: its begin reached the profilers (it
// began inside the capture window), so its end does too.
struct OpenScope {
  NameId name;
  bool emitted;
};

inline std::vector<OpenScope>& scope_stack() {
  thread_local std::vector<OpenScope> stack;
  return stack;
}

#ifdef PASTA_DETAIL_NVTX
PASTA_FUNC void* nvtx_domain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("pasta");
  return domain;
}
inline nvtxDomainHandle_t pasta_nvtx_domain() {
  return static_cast<nvtxDomainHandle_t>(nvtx_domain());
}
#endif

PASTA_FUNC void scope_enter(NameId id, bool nvtx) {
  auto& registry = scope_registry();  // first: it initialises NVTX once
  auto& stack = scope_stack();
  auto& window = capture_window();
  window.range(id, true);  // a range that opens the window is in it
  const bool emitted = window.open();
  const ScopeBegin e{.name = id,
                     .thread = thread_id(),
                     .depth = static_cast<std::uint32_t>(stack.size()),
                     .time_ns = now_ns()};
  stack.push_back({id, emitted});
#ifdef PASTA_DETAIL_NVTX
  if (nvtx) {
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name_of(id).data();  // interned strings are NUL-terminated
    nvtxDomainRangePushEx(pasta_nvtx_domain(), &a);
  }
#else
  (void)nvtx;
#endif
  if (emitted && !registry.empty()) registry.emit(e);
}

PASTA_FUNC bool scope_exit(bool nvtx) {
  auto& stack = scope_stack();
  if (stack.empty()) return false;
  const auto [id, emitted] = stack.back();
  stack.pop_back();
#ifdef PASTA_DETAIL_NVTX
  if (nvtx) nvtxDomainRangePop(pasta_nvtx_domain());
#else
  (void)nvtx;
#endif
  auto& registry = scope_registry();
  if (emitted && !registry.empty())
    registry.emit(ScopeEnd{.name = id,
                           .thread = thread_id(),
                           .depth = static_cast<std::uint32_t>(stack.size()),
                           .time_ns = now_ns()});
  capture_window().range(id, false);  // after the range's own end
  return true;
}

}  // namespace pasta::detail

// What core/scope.hpp's client calls reach. `used`: emitted by every unit
// that includes this in a header-only build, though none of them calls them.
extern "C" {
__attribute__((used)) PASTA_FUNC std::uint32_t pasta_scope_name_v1(const char* name,
                                                                   std::size_t size) {
  return pasta::intern(std::string_view(name, size)).value;
}

__attribute__((used)) PASTA_FUNC void pasta_scope_begin_v1(std::uint32_t name) {
  pasta::detail::scope_enter(pasta::NameId{name}, true);
}

__attribute__((used)) PASTA_FUNC void pasta_scope_end_v1() {
  if (!pasta::detail::scope_exit(true))
    pasta::detail::log_once("scope:unbalanced",
                            "pasta::end() without a matching pasta::start(); ignored");
}
}
