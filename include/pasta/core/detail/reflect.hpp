// Field-level reflection over events: iterate a struct's fields by name, map
// an EventKind back to its type, and check at compile time that every field
// of an event is listed in its line below. Each line expands to a function
// that calls f(name, &T::field) for each field in order: no type-level
// machinery. Boost.Hana's adapted structs, which this replaced, cost a trace
// unit about a second (trace/reader.hpp alone: 2.0 s with them, 0.9 s
// without; g++ 12, -fsyntax-only).
#pragma once

#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

#include <pasta/core/events.hpp>

namespace pasta::detail {

// Reflect<T>::each(f) calls f(std::string_view name, member pointer) for
// each field of T, in order; PASTA_REFLECT below defines it.
template <class T>
struct Reflect;

template <class T>
concept Reflected = requires {
  Reflect<std::remove_cv_t<T>>::reflected;
};

}  // namespace pasta::detail

// PASTA_REFLECT(T, a, b, c): Reflect<T>::each calls f("a", &T::a), then b, then c.
// The preprocessor's loop over the field names (__VA_OPT__, C++20): each
// PASTA_DETAIL_EXPAND rescans its argument 4 x 4 x 4 = 64 times, enough for 64 fields
// (a longer line fails to compile).
#define PASTA_DETAIL_PARENS ()
#define PASTA_DETAIL_EXPAND(...) \
  PASTA_DETAIL_EXPAND3(          \
      PASTA_DETAIL_EXPAND3(PASTA_DETAIL_EXPAND3(PASTA_DETAIL_EXPAND3(__VA_ARGS__))))
#define PASTA_DETAIL_EXPAND3(...) \
  PASTA_DETAIL_EXPAND2(           \
      PASTA_DETAIL_EXPAND2(PASTA_DETAIL_EXPAND2(PASTA_DETAIL_EXPAND2(__VA_ARGS__))))
#define PASTA_DETAIL_EXPAND2(...) \
  PASTA_DETAIL_EXPAND1(           \
      PASTA_DETAIL_EXPAND1(PASTA_DETAIL_EXPAND1(PASTA_DETAIL_EXPAND1(__VA_ARGS__))))
#define PASTA_DETAIL_EXPAND1(...) __VA_ARGS__
#define PASTA_DETAIL_VISIT_FIELDS(T, ...) \
  __VA_OPT__(PASTA_DETAIL_EXPAND(PASTA_DETAIL_VISIT_NEXT(T, __VA_ARGS__)))
#define PASTA_DETAIL_VISIT_NEXT(T, field, ...) \
  f(std::string_view(#field), &T::field);      \
  __VA_OPT__(PASTA_DETAIL_VISIT_AGAIN PASTA_DETAIL_PARENS(T, __VA_ARGS__))
#define PASTA_DETAIL_VISIT_AGAIN() PASTA_DETAIL_VISIT_NEXT
#define PASTA_REFLECT(T, ...)                   \
  template <>                                   \
  struct Reflect<T> {                           \
    static constexpr bool reflected = true;     \
    template <class F>                          \
    static constexpr void each(F&& f) {         \
      PASTA_DETAIL_VISIT_FIELDS(T, __VA_ARGS__) \
    }                                           \
  }

namespace pasta::detail {

PASTA_REFLECT(Dim3, x, y, z);
PASTA_REFLECT(DeviceInfo, device, name, cc_major, cc_minor, sm_count, global_mem_bytes);
PASTA_REFLECT(KernelLaunch, correlation, context, stream, device, name, grid, block,
              shared_mem_bytes, thread, time_ns);
PASTA_REFLECT(KernelComplete, correlation, context, stream, device, name, grid, block,
              shared_mem_bytes, start_ns, end_ns, op);
PASTA_REFLECT(MemAlloc, address, bytes, device, mem_kind, stream, time_ns);
PASTA_REFLECT(MemFree, address, bytes, device, mem_kind, stream, time_ns);
PASTA_REFLECT(Memcpy, correlation, context, stream, device, copy_kind, bytes, start_ns, end_ns, op);
PASTA_REFLECT(Memset, correlation, context, stream, device, value, address, bytes, start_ns, end_ns,
              op);
PASTA_REFLECT(Synchronize, sync_kind, device, context, stream, thread, start_ns, end_ns);
PASTA_REFLECT(ModuleLoad, device, context, module, image_bytes, time_ns);
PASTA_REFLECT(MemAccess, correlation, address, pc, alloc_base, device, bytes, flags, space);
PASTA_REFLECT(AccessHistogram, correlation, address, alloc_base, device, bin_bytes, reads, writes,
              read_bytes, write_bytes);
PASTA_REFLECT(ScopeBegin, name, thread, depth, time_ns);
PASTA_REFLECT(ScopeEnd, name, thread, depth, time_ns);
PASTA_REFLECT(OpBegin, id, parent, sequence, name, inputs, thread, depth, time_ns, module, source,
              backward);
PASTA_REFLECT(OpEnd, id, name, thread, depth, time_ns);
PASTA_REFLECT(TensorAlloc, address, bytes, device, total_allocated, total_reserved, time_ns, op,
              thread);
PASTA_REFLECT(TensorFree, address, bytes, device, total_allocated, total_reserved, time_ns);
PASTA_REFLECT(KernelCounters, correlation, device, passes, dram_bytes_read, dram_bytes_write,
              dram_throughput_pct, sm_throughput_pct, l1_hit_rate_pct, l2_hit_rate_pct,
              achieved_occupancy_pct, tensor_active_pct, inst_executed, flops, l2_warm_replay);
PASTA_REFLECT(StallSample, function, pc, reason, samples, device);
PASTA_REFLECT(TensorView, address, bytes, base, base_bytes, layout, element_bytes, device, op,
              thread);
PASTA_REFLECT(FusedKernel, op, kernel, source, fused, graph);
PASTA_REFLECT(ModuleCall, module, parent, class_name, source, thread, depth, begin_ns, end_ns);
PASTA_REFLECT(PcAccessCount, correlation, address, pc, count, bytes, device, flags, space);

// f(std::string_view field_name, Field& value) for each field, in order.
template <Reflected T, class F>
constexpr void for_each_field(T& obj, F&& f) {
  Reflect<std::remove_cv_t<T>>::each(
      [&](std::string_view name, auto member) { f(name, obj.*member); });
}

// f(std::string_view field_name, std::type_identity<Field>) for each field of T.
template <Reflected T, class F>
constexpr void for_each_field_type(F&& f) {
  Reflect<std::remove_cv_t<T>>::each([&](std::string_view name, auto member) {
    using Field = std::remove_cvref_t<decltype(std::declval<T&>().*member)>;
    f(name, std::type_identity<Field>{});
  });
}

// True when laying the reflected fields out in order gives exactly sizeof(T):
// a field missing from its PASTA_REFLECT line would make the sum smaller.
template <Reflected T>
consteval bool fully_reflected() {
  std::size_t offset = 0, max_align = 1;
  for_each_field_type<T>([&](std::string_view, auto type) {
    using Field = typename decltype(type)::type;
    offset = (offset + alignof(Field) - 1) / alignof(Field) * alignof(Field) + sizeof(Field);
    max_align = alignof(Field) > max_align ? alignof(Field) : max_align;
  });
  return (offset + max_align - 1) / max_align * max_align == sizeof(T);
}

// Calls f(std::type_identity<E>{}) for the event type whose kind is k; false if none.
template <class F>
bool visit_kind(EventKind k, F&& f) {
  bool found = false;
  for_each_type(all_events, [&](auto type) {
    using E = typename decltype(type)::type;
    if (!found && E::kind == k) {
      found = true;
      f(type);
    }
  });
  return found;
}

// Every event's PASTA_REFLECT line names all its fields and its kind is unique.
inline constexpr bool events_are_consistent = [] {
  bool ok = true;
  std::size_t index = 0;
  for_each_type(all_events, [&](auto type) {
    using E = typename decltype(type)::type;
    ok = ok && Event<E> && fully_reflected<E>() && static_cast<std::size_t>(E::kind) == index + 1;
    ++index;
  });
  return ok;
}();
static_assert(events_are_consistent,
              "an event in pasta::all_events is not trivially copyable, has a field missing "
              "from its PASTA_REFLECT line, or is out of EventKind order");

}  // namespace pasta::detail
