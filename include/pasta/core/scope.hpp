// Regions marked by the program: PASTA_SCOPE("name") for a block,
// pasta::start("name") / pasta::end() across calls. Each region becomes
// ScopeBegin/ScopeEnd events for every live profiler and an NVTX range for
// Nsight. With PASTA_DISABLE defined, all of it compiles to nothing.
//
// The client header: it includes no standard header beyond <cstddef> and
// <cstdint>, so that marking regions costs a translation unit next to
// nothing once pasta is compiled (PASTA_COMPILED, docs/user-guide.md, "Compile time").
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

#include <pasta/core/detail/api.hpp>

namespace pasta {

namespace detail {
// The interned name's id (NameId::value).
PASTA_FUNC std::uint32_t scope_name(const char* name, std::size_t size);
// Enters the scope of that name on this thread, with an NVTX range.
PASTA_FUNC void scope_begin(std::uint32_t name);
// Leaves this thread's innermost scope; logs once if there is none.
PASTA_FUNC void scope_end();

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

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/core/detail/scope_registry.hpp>
#endif

#endif  // PASTA_DISABLE
