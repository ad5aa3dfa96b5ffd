// Field-level reflection over events (Boost.Hana): iterate a struct's
// fields by name, map an EventKind back to its type, and check at compile
// time that every field of an event is listed in its adapt line.
#pragma once

#include <boost/hana/accessors.hpp>
#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/at_key.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>
#include <boost/hana/tuple.hpp>

#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

#include <pasta/core/events.hpp>

BOOST_HANA_ADAPT_STRUCT(pasta::Dim3, x, y, z);
BOOST_HANA_ADAPT_STRUCT(pasta::DeviceInfo, device, name, cc_major, cc_minor, sm_count,
                        global_mem_bytes);
BOOST_HANA_ADAPT_STRUCT(pasta::KernelLaunch, correlation, context, stream, device, name, grid,
                        block, shared_mem_bytes, thread, time_ns);
BOOST_HANA_ADAPT_STRUCT(pasta::KernelComplete, correlation, context, stream, device, name, grid,
                        block, shared_mem_bytes, start_ns, end_ns, op);
BOOST_HANA_ADAPT_STRUCT(pasta::MemAlloc, address, bytes, device, mem_kind, stream, time_ns);
BOOST_HANA_ADAPT_STRUCT(pasta::MemFree, address, bytes, device, mem_kind, stream, time_ns);
BOOST_HANA_ADAPT_STRUCT(pasta::Memcpy, correlation, context, stream, device, copy_kind, bytes,
                        start_ns, end_ns, op);
BOOST_HANA_ADAPT_STRUCT(pasta::Memset, correlation, context, stream, device, value, address, bytes,
                        start_ns, end_ns, op);
BOOST_HANA_ADAPT_STRUCT(pasta::Synchronize, sync_kind, device, context, stream, thread, start_ns,
                        end_ns);
BOOST_HANA_ADAPT_STRUCT(pasta::ModuleLoad, device, context, module, image_bytes, time_ns);
BOOST_HANA_ADAPT_STRUCT(pasta::MemAccess, correlation, address, pc, alloc_base, device, bytes,
                        flags, space);
BOOST_HANA_ADAPT_STRUCT(pasta::AccessHistogram, correlation, address, alloc_base, device, bin_bytes,
                        reads, writes, read_bytes, write_bytes);
BOOST_HANA_ADAPT_STRUCT(pasta::ScopeBegin, name, thread, depth, time_ns);
BOOST_HANA_ADAPT_STRUCT(pasta::ScopeEnd, name, thread, depth, time_ns);
BOOST_HANA_ADAPT_STRUCT(pasta::OpBegin, id, parent, sequence, name, inputs, thread, depth,
                        time_ns, module, source, backward);
BOOST_HANA_ADAPT_STRUCT(pasta::OpEnd, id, name, thread, depth, time_ns);
BOOST_HANA_ADAPT_STRUCT(pasta::TensorAlloc, address, bytes, device, total_allocated, total_reserved,
                        time_ns, op, thread);
BOOST_HANA_ADAPT_STRUCT(pasta::TensorFree, address, bytes, device, total_allocated, total_reserved,
                        time_ns);
BOOST_HANA_ADAPT_STRUCT(pasta::KernelCounters, correlation, device, passes, dram_bytes_read,
                        dram_bytes_write, dram_throughput_pct, sm_throughput_pct, l1_hit_rate_pct,
                        l2_hit_rate_pct, achieved_occupancy_pct, tensor_active_pct, inst_executed,
                        flops, l2_warm_replay);
BOOST_HANA_ADAPT_STRUCT(pasta::StallSample, function, pc, reason, samples, device);
BOOST_HANA_ADAPT_STRUCT(pasta::TensorView, address, bytes, base, base_bytes, layout, element_bytes,
                        device, op, thread);
BOOST_HANA_ADAPT_STRUCT(pasta::FusedKernel, op, kernel, source, fused, graph);
BOOST_HANA_ADAPT_STRUCT(pasta::ModuleCall, module, parent, class_name, source, thread, depth,
                        begin_ns, end_ns);
BOOST_HANA_ADAPT_STRUCT(pasta::PcAccessCount, correlation, address, pc, count, bytes, device, flags,
                        space);

namespace pasta::detail {

namespace hana = boost::hana;

template <class T>
concept Reflected = hana::Struct<T>::value;

// f(std::string_view field_name, Field& value) for each field, in order.
template <Reflected T, class F>
constexpr void for_each_field(T& obj, F&& f) {
  hana::for_each(hana::accessors<std::remove_const_t<T>>(), [&](auto pair) {
    f(std::string_view(hana::to<const char*>(hana::first(pair))), hana::second(pair)(obj));
  });
}

// f(std::string_view field_name, hana::type<Field>) for each field of T.
template <Reflected T, class F>
constexpr void for_each_field_type(F&& f) {
  hana::for_each(hana::accessors<T>(), [&](auto pair) {
    using Field = std::remove_cvref_t<decltype(hana::second(pair)(std::declval<T&>()))>;
    f(std::string_view(hana::to<const char*>(hana::first(pair))), hana::type_c<Field>);
  });
}

// True when laying the reflected fields out in order gives exactly sizeof(T):
// a field missing from the adapt line would make the sum smaller.
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

// Every event's adapt line names all its fields and its kind is unique.
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
              "from its BOOST_HANA_ADAPT_STRUCT line, or is out of EventKind order");

}  // namespace pasta::detail
