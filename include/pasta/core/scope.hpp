// Regions marked by the program: PASTA_SCOPE("name") for a block,
// pasta::start("name") / pasta::end() across calls. Each region becomes
// ScopeBegin/ScopeEnd events for every live profiler and an NVTX range for
// Nsight. With PASTA_DISABLE defined, all of it compiles to nothing.
//
// The client header: it includes no standard header beyond <cstddef>,
// <cstdint> and <cstdio>, and no code of pasta's, so that marking regions
// costs a translation unit next to nothing in every build. The code behind
// it has C names and is the program's pasta code: pasta::runtime, the unit
// that defines PASTA_IMPLEMENT, or in a header-only build any unit that
// includes the profiler (core/detail/scope_impl.hpp). A program with none of
// that runs, its scopes doing nothing, and says so once
// (docs/user-guide.md, "Compile time").
// PASTA_SCOPE interns its name once per call site: give it a literal, or
// use pasta::Scope for a name that changes.
#pragma once

#include <cstddef>
#include <cstdint>

#define PASTA_DETAIL_CAT2(a, b) a##b
#define PASTA_DETAIL_CAT(a, b) PASTA_DETAIL_CAT2(a, b)

#ifdef PASTA_DISABLE

#include <string_view>

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

#include <cstdio>

#include <pasta/core/detail/api.hpp>

// The interned name's id (NameId::value); enters the scope of that name on
// this thread, with an NVTX range; leaves this thread's innermost scope
// (logs once if there is none). In a header-only build they are weak, null
// where the program has no pasta code; a compiled build links the runtime,
// whose object they pull in.
#ifdef PASTA_COMPILED
#define PASTA_DETAIL_SCOPE_LINK
#else
#define PASTA_DETAIL_SCOPE_LINK __attribute__((weak))
#endif
extern "C" {
PASTA_DETAIL_SCOPE_LINK std::uint32_t pasta_scope_name_v1(const char* name, std::size_t size);
PASTA_DETAIL_SCOPE_LINK void pasta_scope_begin_v1(std::uint32_t name);
PASTA_DETAIL_SCOPE_LINK void pasta_scope_end_v1();
}

namespace pasta {

namespace detail {
// Said once, the first time a scope is marked in a program without pasta's code.
inline void scope_code_missing() {
  static bool said = false;
  if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
    std::fputs(
        "pasta: PASTA_SCOPE and pasta::start/end do nothing here: no unit of this program has "
        "pasta's code (link pasta::runtime, define PASTA_IMPLEMENT in one unit, or include "
        "the profiler's headers in one)\n",
        stderr);
}
#ifdef PASTA_COMPILED
inline std::uint32_t scope_name(const char* name, std::size_t size) {
  return pasta_scope_name_v1(name, size);
}
inline void scope_begin(std::uint32_t name) { pasta_scope_begin_v1(name); }
inline void scope_end() { pasta_scope_end_v1(); }
#else
inline std::uint32_t scope_name(const char* name, std::size_t size) {
  if (pasta_scope_name_v1) return pasta_scope_name_v1(name, size);
  scope_code_missing();
  return 0;
}
inline void scope_begin(std::uint32_t name) {
  if (pasta_scope_begin_v1) pasta_scope_begin_v1(name);
}
inline void scope_end() {
  if (pasta_scope_end_v1) pasta_scope_end_v1();
}
#endif

// A name as its characters: a string literal or C string, or anything
// with data() and size() (std::string, std::string_view).
struct ScopeChars {
  const char* data;
  std::size_t size;
  ScopeChars(const char* s) : data(s), size(__builtin_strlen(s)) {}  // NOLINT: implicit
  template <class S>
  requires requires(const S& s) {
    s.data();
    s.size();
  }
  ScopeChars(const S& s) : data(s.data()), size(s.size()) {}  // NOLINT: implicit
};

// A call site's name, interned when the site first runs.
struct ScopeSite {
  std::uint32_t name;
  explicit ScopeSite(ScopeChars s) : name(scope_name(s.data, s.size)) {}
};
}  // namespace detail

inline namespace scopes_enabled {

inline void start(detail::ScopeChars name) {
  detail::scope_begin(detail::scope_name(name.data, name.size));
}
inline void end() { detail::scope_end(); }

class Scope {
 public:
  explicit Scope(detail::ScopeChars name) { start(name); }
  explicit Scope(const detail::ScopeSite& site) { detail::scope_begin(site.name); }
  ~Scope() { end(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};

}  // namespace scopes_enabled
}  // namespace pasta

#define PASTA_SCOPE(name)                                                                  \
  static const ::pasta::detail::ScopeSite PASTA_DETAIL_CAT(pasta_scope_site_, __LINE__){name}; \
  const ::pasta::Scope PASTA_DETAIL_CAT(pasta_scope_, __LINE__)(PASTA_DETAIL_CAT(pasta_scope_site_, __LINE__))

#endif  // PASTA_DISABLE
