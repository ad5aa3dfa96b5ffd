// OpSummary's event handlers and report (its tables): inline in header-only
// builds; in a compiled build (core/detail/api.hpp) compiled once, in the
// runtime, so a unit that includes the header parses none of it.
#pragma once

#include <pasta/tools/detail/units.hpp>
#include <pasta/tools/op_summary.hpp>

namespace pasta::tools {

PASTA_FUNC void OpSummary::report(Report& out) const {
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; i < by_name_.size(); ++i)
    if (seen(by_name_[i]) && !only_launches(by_name_[i])) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Stats &x = by_name_[a], &y = by_name_[b];
    if (x.device_self_ns != y.device_self_ns) return x.device_self_ns > y.device_self_ns;
    if (x.calls != y.calls) return x.calls > y.calls;
    return name_of(NameId{a}) < name_of(NameId{b});
  });
  std::uint64_t calls = 0;
  for (std::uint32_t i : order) calls += by_name_[i].calls;
  constexpr double ms = pasta::detail::ms_per_ns;
  out.summary("operators", order.size());
  out.summary("calls", calls);
  out.summary("kernels", kernels_);
  out.summary("kernels attributed to an operator", attributed_);
  out.summary("kernels attributed (%)", pasta::detail::share_pct(attributed_, kernels_));
  out.summary("kernels outside every operator", unattributed_kernels_);
  out.summary("kernels by attribution: direct operator", direct_);
  out.summary("kernels by attribution: fused by compiler", fused_kernels_);
  out.summary("kernels by attribution: unattributed", unattributed_total());
  out.summary("kernels whose operator record was evicted", evicted_.kernels);
  out.summary("copies and memsets outside every operator", unattributed_copies_);
  out.summary("device time (ms)", device_ns_ * ms);
  if (evicted_.kernels || evicted_.copies)
    out.note("kernels and copies that completed after more than " + std::to_string(table_slots) +
             " later operators began are listed as '(operator record evicted)'");
  if (!compiled_.empty())
    out.note(
        "a compiled kernel that fuses N operators (as its compiler's metadata names them) is "
        "charged to each in equal shares, 1/N of its device time, as self and total time; its "
        "launching call, named after the kernel, and that call's callers get the whole time in "
        "device_total_ms only");
  operators_table(out, order);
  unattributed_table(out);
  compiled_table(out);
  inputs_table(out);
}

// Operators by device time, each with the line of the program whose calls of
// it took the most.
PASTA_FUNC void OpSummary::operators_table(Report& out,
                                           const std::vector<std::uint32_t>& order) const {
  constexpr double ms = pasta::detail::ms_per_ns;
  // Per operator, the line of the program whose calls of it took the most device time.
  std::unordered_map<std::uint32_t, std::pair<std::uint64_t, std::uint32_t>> top_line;
  for (const auto& [key, ns] : lines_) {
    auto& best = top_line[static_cast<std::uint32_t>(key >> 32)];
    const auto source = static_cast<std::uint32_t>(key);
    if (ns > best.first || (ns == best.first && source < best.second)) best = {ns, source};
  }
  auto line_of = [&](std::uint32_t op) -> std::string {
    auto it = top_line.find(op);
    return it == top_line.end() ? std::string() : std::string(name_of(NameId{it->second.second}));
  };
  auto& ops = out.table("operators", "Operators by device time",
                        {"rank", "operator", "calls", "kernels", "copies", "device_self_ms",
                         "device_total_ms", "host_self_ms", "host_total_ms", "device_self_pct",
                         "fused_kernels", "fused_ms", "attribution", "top_line"});
  for (std::size_t c = 5; c <= 8; ++c) ops.precision(c, 3);
  ops.precision(9, 1);
  ops.precision(11, 3);
  auto pct = [&](std::uint64_t ns) { return pasta::detail::share_pct(ns, device_ns_); };
  std::uint64_t rank = 0;
  for (std::uint32_t i : order) {
    const Stats& s = by_name_[i];
    ops.row(++rank, std::string(name_of(NameId{i})), s.calls, s.kernels, s.copies,
            s.device_self_ns * ms, s.device_total_ns * ms, s.host_self_ns * ms,
            s.host_total_ns * ms, pct(s.device_self_ns), s.fused_kernels, s.fused_ns * ms,
            std::string(attribution(s)), line_of(i));
  }
  if (evicted_.kernels || evicted_.copies)
    ops.row(Cell{}, "(operator record evicted)", Cell{}, evicted_.kernels, evicted_.copies,
            evicted_.device_self_ns * ms, evicted_.device_self_ns * ms, Cell{}, Cell{},
            pct(evicted_.device_self_ns), Cell{}, Cell{}, Cell{});
}

PASTA_FUNC void OpSummary::unattributed_table(Report& out) const {
  std::vector<std::pair<NameId, KernelStats>> kernels(unattributed_.begin(), unattributed_.end());
  std::sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) {
    if (a.second.device_ns != b.second.device_ns) return a.second.device_ns > b.second.device_ns;
    if (a.second.launches != b.second.launches) return a.second.launches > b.second.launches;
    return name_of(a.first) < name_of(b.first);
  });
  auto& outside = out.table("unattributed", "Kernels launched outside every operator",
                            {"kernel", "launches", "device_ms"});
  outside.precision(2, 3);
  for (const auto& [k, s] : kernels)
    outside.row(pasta::detail::short_kernel_name(pasta::detail::demangle(name_of(k))), s.launches,
                s.device_ns * pasta::detail::ms_per_ns);
}

PASTA_FUNC void OpSummary::compiled_table(Report& out) const {
  if (compiled_.empty()) return;
  std::vector<std::size_t> by_time(compiled_.size());
  for (std::size_t i = 0; i < by_time.size(); ++i) by_time[i] = i;
  std::stable_sort(by_time.begin(), by_time.end(), [&](std::size_t a, std::size_t b) {
    return compiled_[a].device_ns > compiled_[b].device_ns;
  });
  auto& ck =
      out.table("compiled_kernels", "Compiled kernels and the operators their compiler fused",
                {"kernel", "source", "attribution", "operators", "launches", "kernels",
                 "device_ms", "graph"});
  ck.precision(6, 3);
  for (std::size_t i : by_time) {
    const CompiledStats& c = compiled_[i];
    ck.row(std::string(name_of(c.kernel)), std::string(name_of(c.source)),
           c.ops.empty() ? "unattributed" : "fused by compiler", std::string(name_of(c.fused)),
           c.launches, c.kernels, c.device_ns * pasta::detail::ms_per_ns, std::string(name_of(c.graph)));
  }
}

PASTA_FUNC void OpSummary::inputs_table(Report& out) const {
  if (inputs_.empty()) return;
  std::vector<std::pair<std::uint64_t, InputStats>> shapes(inputs_.begin(), inputs_.end());
  std::sort(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) {
    if (a.second.device_self_ns != b.second.device_self_ns)
      return a.second.device_self_ns > b.second.device_self_ns;
    if (a.second.calls != b.second.calls) return a.second.calls > b.second.calls;
    return a.first < b.first;
  });
  auto& in = out.table("inputs", "Operators by input shapes",
                       {"operator", "inputs", "calls", "device_self_ms"});
  in.precision(3, 3);
  for (const auto& [key, s] : shapes)
    in.row(std::string(name_of(NameId{static_cast<std::uint32_t>(key >> 32)})),
           std::string(name_of(NameId{static_cast<std::uint32_t>(key)})), s.calls,
           s.device_self_ns * pasta::detail::ms_per_ns);
}

PASTA_FUNC void OpSummary::on(const OpBegin& e) {
  const Instance inst{e.id, e.parent, e.name, e.inputs, e.source, e.thread};
  table_.put(inst);
  auto& stack = stacks_[e.thread];
  if (stack.size() > e.depth) stack.resize(e.depth);  // ends we missed
  stack.push_back({inst, e.time_ns, 0});
  ++at(e.name).calls;
  if (e.inputs) ++inputs_[input_key(e.name, e.inputs)].calls;
}

PASTA_FUNC void OpSummary::on(const OpEnd& e) {
  auto& stack = stacks_[e.thread];
  std::size_t i = stack.size();
  while (i > 0 && stack[i - 1].inst.id != e.id) --i;
  if (i == 0) return;  // its begin came before profiling started
  const Open op = stack[i - 1];
  stack.resize(i - 1);  // with any inner operator whose end was missed
  const std::uint64_t d = e.time_ns >= op.begin_ns ? e.time_ns - op.begin_ns : 0;
  Stats& s = at(op.inst.name);
  s.host_self_ns += d >= op.children_ns ? d - op.children_ns : 0;
  // An operator that calls itself (directly or not) is timed once, outermost.
  const bool nested_in_itself = std::any_of(
      stack.begin(), stack.end(), [&](const Open& o) { return o.inst.name == op.inst.name; });
  if (!nested_in_itself) s.host_total_ns += d;
  if (!stack.empty()) stack.back().children_ns += d;
}

PASTA_FUNC void OpSummary::on(const KernelComplete& e) {
  const std::uint64_t d = duration_ns(e.start_ns, e.end_ns);
  ++kernels_;
  device_ns_ += d;
  const Instance* launch = e.op ? table_.find(e.op) : nullptr;
  if (launch && launch->compiled) {
    charge_fused(*launch, d);
  } else if (e.op == 0) {
    KernelStats& k = unattributed_[e.name];
    ++k.launches;
    k.device_ns += d;
    ++unattributed_kernels_;
  } else if (const Instance* op = charge(e.op, d)) {
    ++at(op->name).kernels;
    ++attributed_;
    ++direct_;
  } else {
    ++evicted_.kernels;
    evicted_.device_self_ns += d;
  }
}

PASTA_FUNC void OpSummary::on(const FusedKernel& e) {
  Instance* inst = table_.find(e.op);
  if (!inst) return;
  const std::uint64_t key = e.source ? std::uint64_t{1} << 63 | e.source.value
                                     : std::uint64_t{e.graph.value} << 32 | e.kernel.value;
  auto [it, fresh] = compiled_index_.try_emplace(key, compiled_.size() + 1);
  if (fresh) {
    CompiledStats c;
    c.kernel = e.kernel, c.source = e.source, c.fused = e.fused, c.graph = e.graph;
    for (const std::string& op : split_list(name_of(e.fused))) c.ops.push_back(intern(op));
    compiled_.push_back(std::move(c));
  }
  inst->compiled = it->second;
  ++compiled_[it->second - 1].launches;
  ++at(inst->name).launches;
}

PASTA_FUNC auto OpSummary::stats(std::string_view op) const -> const Stats* {
  for (std::size_t i = 0; i < by_name_.size(); ++i)
    if (seen(by_name_[i]) && name_of(NameId{static_cast<std::uint32_t>(i)}) == op)
      return &by_name_[i];
  return nullptr;
}

PASTA_FUNC std::string_view OpSummary::attribution(const Stats& s) {
  const bool direct = s.kernels || s.copies;
  if (s.fused_kernels) return direct ? "direct + fused by compiler" : "fused by compiler";
  if (s.launches && s.kernels) return "compiled, no operator named";
  return direct ? "direct operator" : "";
}

PASTA_FUNC std::vector<std::string> OpSummary::split_list(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const auto comma = list.find(", ");
    if (comma) out.emplace_back(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 2);
  }
  return out;
}

PASTA_FUNC void OpSummary::charge_fused(const Instance& inst, std::uint64_t d) {
  CompiledStats& c = compiled_[inst.compiled - 1];
  ++c.kernels;
  c.device_ns += d;
  if (c.ops.empty()) {
    charge(inst.id, d);
    ++at(inst.name).kernels;
    ++unnamed_compiled_;
    return;
  }
  ++fused_kernels_;
  ++attributed_;
  const std::uint64_t n = c.ops.size();
  chain_.clear();
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t share = d / n + (i < d % n ? 1 : 0);
    Stats& s = at(c.ops[i]);
    s.device_self_ns += share;
    s.device_total_ns += share;
    s.fused_ns += share;
    ++s.fused_kernels;
    chain_.push_back(c.ops[i]);
  }
  const Instance* up = &inst;
  for (std::size_t depth = 0; up && depth < max_depth; ++depth) {
    if (std::find(chain_.begin(), chain_.end(), up->name) == chain_.end()) {
      chain_.push_back(up->name);
      at(up->name).device_total_ns += d;
    }
    up = up->parent ? find(up->parent, up->thread) : nullptr;
  }
}

PASTA_FUNC auto OpSummary::at(NameId id) -> Stats& {
  if (id.value >= by_name_.size()) by_name_.resize(id.value + 1);
  return by_name_[id.value];
}

PASTA_FUNC auto OpSummary::find(std::uint64_t id, std::uint32_t thread) const -> const Instance* {
  if (const Instance* inst = table_.find(id)) return inst;
  auto it = stacks_.find(thread);
  if (it == stacks_.end()) return nullptr;
  for (const Open& o : it->second)
    if (o.inst.id == id) return &o.inst;
  return nullptr;
}

PASTA_FUNC auto OpSummary::charge(std::uint64_t op, std::uint64_t d) -> const Instance* {
  const Instance* const self = table_.find(op);
  if (!self) return nullptr;
  at(self->name).device_self_ns += d;
  if (self->inputs) inputs_[input_key(self->name, self->inputs)].device_self_ns += d;
  if (self->source) lines_[input_key(self->name, self->source)] += d;
  chain_.clear();  // a member: its capacity is kept, so no allocation per event
  const Instance* inst = self;
  for (std::size_t depth = 0; inst && depth < max_depth; ++depth) {
    if (std::find(chain_.begin(), chain_.end(), inst->name) == chain_.end()) {
      chain_.push_back(inst->name);
      at(inst->name).device_total_ns += d;
    }
    inst = inst->parent ? find(inst->parent, inst->thread) : nullptr;
  }
  return self;
}

PASTA_FUNC void OpSummary::copy(std::uint64_t op, std::uint64_t d) {
  device_ns_ += d;
  if (op == 0) {
    ++unattributed_copies_;
  } else if (const Instance* inst = charge(op, d)) {
    ++at(inst->name).copies;
  } else {
    ++evicted_.copies;
    evicted_.device_self_ns += d;
  }
}

}  // namespace pasta::tools
