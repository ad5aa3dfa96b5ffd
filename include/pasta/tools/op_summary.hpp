// Framework operators (ATen ops, from torch::Aten) with the device work they
// launched: per operator name, calls, kernels and copies, device time self
// and total (with the operators it calls), host time self and total. Answers
// "which operators cost the GPU time", like torch.profiler's key_averages().
//
// Each kernel is attributed one of three ways, and the report says which:
// * direct operator: the operator call that launched it (KernelComplete::op);
// * fused by compiler: a compiled kernel (FusedKernel: an Inductor Triton
//   kernel) is charged to the operators the compiler says it fuses, in equal
//   shares: 1/N of its device time to each of its N operators (the
//   nanoseconds left over to the first ones listed), as self and total time;
//   its launching call (named after the kernel) and that call's callers get
//   the whole time in their totals;
// * unattributed: launched outside every operator, or a compiled kernel whose
//   compiler named no operator (charged to its launching call as direct).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <pasta/core/detail/demangle.hpp>
#include <pasta/core/detail/api.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/report.hpp>
#include <pasta/tools/detail/op_table.hpp>

namespace pasta::tools {

class OpSummary {
 public:
  static constexpr std::string_view name = "op_summary";
  // Device activities complete after their operator ended, so ended
  // instances are kept in a detail::OpTable of this many slots.
  static constexpr std::size_t table_slots = detail::op_table_slots;
  // A bound on ancestor walks, against parent links that loop in a damaged trace.
  static constexpr std::size_t max_depth = 1024;

  struct Stats {
    std::uint64_t calls = 0, kernels = 0, copies = 0;
    std::uint64_t device_self_ns = 0, device_total_ns = 0;
    std::uint64_t host_self_ns = 0, host_total_ns = 0;
    // Shares of compiled kernels a compiler fused this operator into; part of
    // device_self_ns and device_total_ns.
    std::uint64_t fused_kernels = 0, fused_ns = 0;
    std::uint64_t launches = 0;  // calls that launched a compiled kernel (named after it)
  };
  struct CompiledStats {  // one compiled kernel (by source hash)
    NameId kernel{}, source{}, fused{}, graph{};
    std::vector<NameId> ops;  // `fused`, one name each
    std::uint64_t launches = 0, kernels = 0, device_ns = 0;
  };
  struct KernelStats {  // kernels launched outside every operator
    std::uint64_t launches = 0, device_ns = 0;
  };

  void on(const OpBegin& e) {
    const Instance inst{e.id, e.parent, e.name, e.inputs, e.thread};
    table_.put(inst);
    auto& stack = stacks_[e.thread];
    if (stack.size() > e.depth) stack.resize(e.depth);  // ends we missed
    stack.push_back({inst, e.time_ns, 0});
    ++at(e.name).calls;
    if (e.inputs) ++inputs_[input_key(e.name, e.inputs)].calls;
  }

  void on(const OpEnd& e) {
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

  void on(const KernelComplete& e) {
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
  // Right after the OpBegin of the call that launches a compiled kernel.
  void on(const FusedKernel& e) {
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
  void on(const Memcpy& e) { copy(e.op, duration_ns(e.start_ns, e.end_ns)); }
  void on(const Memset& e) { copy(e.op, duration_ns(e.start_ns, e.end_ns)); }

  // nullptr if the operator was never seen.
  const Stats* stats(std::string_view op) const {
    for (std::size_t i = 0; i < by_name_.size(); ++i)
      if (seen(by_name_[i]) && name_of(NameId{static_cast<std::uint32_t>(i)}) == op)
        return &by_name_[i];
    return nullptr;
  }
  // Kernels joined to an operator instance still in the table.
  std::uint64_t attributed() const { return attributed_; }
  // Kernels launched outside every operator (op == 0).
  std::uint64_t unattributed() const { return unattributed_kernels_; }
  // Kernels by how they were attributed: to the operator call that launched
  // them, to the operators a compiler fused, or to none (outside every
  // operator, or compiled with no operator named).
  std::uint64_t direct() const { return direct_; }
  std::uint64_t fused() const { return fused_kernels_; }
  std::uint64_t unattributed_total() const { return unattributed_kernels_ + unnamed_compiled_; }
  // Compiled kernels seen, in order of first launch.
  const std::vector<CompiledStats>& compiled() const { return compiled_; }
  // Kernels and copies whose operator instance had left the table.
  const Stats& evicted() const { return evicted_; }
  std::uint64_t unattributed_copies() const { return unattributed_copies_; }

  void report(Report& out) const;  // tools/detail/op_summary_impl.hpp

 private:
  struct Instance {
    std::uint64_t id = 0, parent = 0;
    NameId name{}, inputs{};
    std::uint32_t thread = 0;
    std::uint32_t compiled = 0;  // a compiled kernel's launch: 1 + its index in compiled_
  };
  struct Open {
    Instance inst;
    std::uint64_t begin_ns = 0, children_ns = 0;  // children: direct ones' host time
  };
  struct InputStats {
    std::uint64_t calls = 0, device_self_ns = 0;
  };

  static std::uint64_t input_key(NameId op, NameId inputs) {
    return std::uint64_t{op.value} << 32 | inputs.value;
  }
  static bool seen(const Stats& s) { return s.calls || s.kernels || s.copies || s.fused_kernels; }
  // A name only compiled kernels' launches had, whose kernels all went to
  // fused operators: listed under compiled_kernels, not as an operator.
  static bool only_launches(const Stats& s) {
    return s.launches && s.launches == s.calls && !s.kernels && !s.copies && !s.fused_kernels;
  }
  static std::string_view attribution(const Stats& s) {
    const bool direct = s.kernels || s.copies;
    if (s.fused_kernels) return direct ? "direct + fused by compiler" : "fused by compiler";
    if (s.launches && s.kernels) return "compiled, no operator named";
    return direct ? "direct operator" : "";
  }
  // "aten::add, aten::relu" -> its names.
  static std::vector<std::string> split_list(std::string_view list) {
    std::vector<std::string> out;
    while (!list.empty()) {
      const auto comma = list.find(", ");
      if (comma) out.emplace_back(list.substr(0, comma));
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 2);
    }
    return out;
  }

  // Kernel of compiled launch `inst`: equal shares to the operators its
  // compiler fused, the whole time to the launching call's totals.
  void charge_fused(const Instance& inst, std::uint64_t d) {
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

  Stats& at(NameId id) {
    if (id.value >= by_name_.size()) by_name_.resize(id.value + 1);
    return by_name_[id.value];
  }

  // Instance `id`: from the table or, for an operator still open whose slot
  // was reused (a long one, e.g. a whole training step), from its thread's stack.
  const Instance* find(std::uint64_t id, std::uint32_t thread) const {
    if (const Instance* inst = table_.find(id)) return inst;
    auto it = stacks_.find(thread);
    if (it == stacks_.end()) return nullptr;
    for (const Open& o : it->second)
      if (o.inst.id == id) return &o.inst;
    return nullptr;
  }

  // Device time `d` of an activity of instance `op`: self to its operator,
  // total to it and each distinct operator name above it, once per name so
  // that recursion is not counted twice. The instance, or nullptr if unknown.
  const Instance* charge(std::uint64_t op, std::uint64_t d) {
    const Instance* const self = table_.find(op);
    if (!self) return nullptr;
    at(self->name).device_self_ns += d;
    if (self->inputs) inputs_[input_key(self->name, self->inputs)].device_self_ns += d;
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

  void copy(std::uint64_t op, std::uint64_t d) {
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

  detail::OpTable<Instance> table_;
  std::unordered_map<std::uint32_t, std::vector<Open>> stacks_;  // per thread: open operators
  std::vector<Stats> by_name_;                                   // indexed by NameId
  std::unordered_map<std::uint64_t, InputStats> inputs_;         // (name, inputs) -> stats
  std::unordered_map<NameId, KernelStats> unattributed_;         // kernel name -> stats
  std::vector<CompiledStats> compiled_;                          // compiled kernels
  std::unordered_map<std::uint64_t, std::uint32_t> compiled_index_;  // source -> 1 + index
  std::vector<NameId> chain_;                                    // scratch for charge()
  Stats evicted_;
  std::uint64_t kernels_ = 0, attributed_ = 0, unattributed_kernels_ = 0;
  std::uint64_t direct_ = 0, fused_kernels_ = 0, unnamed_compiled_ = 0;
  std::uint64_t unattributed_copies_ = 0, device_ns_ = 0;
};

}  // namespace pasta::tools

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/tools/detail/op_summary_impl.hpp>
#endif
