// The expected values of the recorded-trace tests, computed from the trace
// itself by a plain pass of trace::TraceReader, with none of pasta's tools or
// processors: what a tool reports is checked against the events, never
// against a number a tool once printed.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <pasta/trace.hpp>

#include "../support.hpp"

namespace pasta::test {

// Every event of a trace, in order (kinds outside AnyEvent are counted only).
struct TraceEvents {
  std::vector<AnyEvent> events;
  std::array<std::uint64_t, detail::event_type_count + 1> per_kind{};

  explicit TraceEvents(const std::string& path) {
    trace::TraceReader reader(path);
    reader.read_all([&](const auto& e) {
      using E = std::remove_cvref_t<decltype(e)>;
      ++per_kind[static_cast<std::size_t>(E::kind)];
      if constexpr (std::is_constructible_v<AnyEvent, E>) events.emplace_back(e);
    });
  }
  std::uint64_t count(EventKind k) const { return per_kind[static_cast<std::size_t>(k)]; }

  template <class E, class F>
  void each(F&& f) const {
    for (const auto& e : events)
      if (const auto* p = std::get_if<E>(&e)) f(*p);
  }
};

// A device record's duration; one without times (a handler that did not time it) takes none.
inline std::uint64_t span_ns(std::uint64_t start, std::uint64_t end) {
  return start != 0 && end >= start ? end - start : 0;
}

// Per kernel name: device records and their summed durations.
struct KernelTruth {
  std::uint64_t completes = 0, device_ns = 0;
};
inline std::map<std::string, KernelTruth> kernels_of(const TraceEvents& t) {
  std::map<std::string, KernelTruth> out;
  t.each<KernelComplete>([&](const KernelComplete& e) {
    KernelTruth& k = out[std::string(name_of(e.name))];
    ++k.completes;
    k.device_ns += span_ns(e.start_ns, e.end_ns);
  });
  return out;
}

// Time (ns) during which at least one interval of `spans` is open, by a sweep
// over their ends: the union's length.
inline std::uint64_t covered_ns(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& spans) {
  std::vector<std::pair<std::uint64_t, int>> edges;
  for (const auto& [b, e] : spans) {
    edges.push_back({b, +1});
    edges.push_back({e, -1});
  }
  std::sort(edges.begin(), edges.end());  // at one time, ends (-1) before starts (+1)
  std::uint64_t covered = 0, last = 0;
  int open = 0;
  for (const auto& [t, d] : edges) {
    if (open > 0) covered += t - last;
    open += d;
    last = t;
  }
  return covered;
}

// Device time per operator name from OpBegin (name, parent) and the `op` each
// kernel, copy and memset carries: self is the operator's own device work,
// total adds that of the operators under it, each name charged once per
// activity however often it repeats up the chain.
struct OpTruth {
  std::uint64_t calls = 0, kernels = 0, self_ns = 0, total_ns = 0;
};
struct OpsTruth {
  std::map<std::string, OpTruth> ops;
  std::uint64_t kernels_with_op = 0, kernels_without_op = 0;
};
inline OpsTruth ops_of(const TraceEvents& t) {
  OpsTruth out;
  std::map<std::uint64_t, std::pair<std::string, std::uint64_t>> instances;  // id -> name, parent
  t.each<OpBegin>([&](const OpBegin& e) {
    instances[e.id] = {std::string(name_of(e.name)), e.parent};
    ++out.ops[std::string(name_of(e.name))].calls;
  });
  auto charge = [&](std::uint64_t op, std::uint64_t d, bool kernel) {
    const auto self = instances.find(op);
    if (self == instances.end()) return;
    OpTruth& s = out.ops[self->second.first];
    s.self_ns += d;
    s.kernels += kernel;
    std::set<std::string> charged;
    auto it = self;
    for (int depth = 0; it != instances.end() && depth < 1024; ++depth) {
      if (charged.insert(it->second.first).second) out.ops[it->second.first].total_ns += d;
      it = instances.find(it->second.second);
    }
  };
  t.each<KernelComplete>([&](const KernelComplete& e) {
    ++(e.op ? out.kernels_with_op : out.kernels_without_op);
    charge(e.op, span_ns(e.start_ns, e.end_ns), true);
  });
  t.each<Memcpy>([&](const Memcpy& e) { charge(e.op, span_ns(e.start_ns, e.end_ns), false); });
  t.each<Memset>([&](const Memset& e) { charge(e.op, span_ns(e.start_ns, e.end_ns), false); });
  return out;
}

}  // namespace pasta::test
