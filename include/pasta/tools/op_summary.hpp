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

#include <pasta/core/detail/api.hpp>
#include <pasta/core/detail/demangle.hpp>
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

  void on(const OpBegin& e);

  void on(const OpEnd& e);

  void on(const KernelComplete& e);
  // Right after the OpBegin of the call that launches a compiled kernel.
  void on(const FusedKernel& e);
  void on(const Memcpy& e) { copy(e.op, duration_ns(e.start_ns, e.end_ns)); }
  void on(const Memset& e) { copy(e.op, duration_ns(e.start_ns, e.end_ns)); }

  // nullptr if the operator was never seen.
  const Stats* stats(std::string_view op) const;
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
  // report()'s tables.
  void operators_table(Report& out, const std::vector<std::uint32_t>& order) const;
  void unattributed_table(Report& out) const;
  void compiled_table(Report& out) const;
  void inputs_table(Report& out) const;
  struct Instance {
    std::uint64_t id = 0, parent = 0;
    NameId name{}, inputs{}, source{};
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
  static std::string_view attribution(const Stats& s);
  // "aten::add, aten::relu" -> its names.
  static std::vector<std::string> split_list(std::string_view list);

  // Kernel of compiled launch `inst`: equal shares to the operators its
  // compiler fused, the whole time to the launching call's totals.
  void charge_fused(const Instance& inst, std::uint64_t d);

  Stats& at(NameId id);

  // Instance `id`: from the table or, for an operator still open whose slot
  // was reused (a long one, e.g. a whole training step), from its thread's stack.
  const Instance* find(std::uint64_t id, std::uint32_t thread) const;

  // Device time `d` of an activity of instance `op`: self to its operator,
  // total to it and each distinct operator name above it, once per name so
  // that recursion is not counted twice. The instance, or nullptr if unknown.
  const Instance* charge(std::uint64_t op, std::uint64_t d);

  void copy(std::uint64_t op, std::uint64_t d);

  detail::OpTable<Instance> table_;
  std::unordered_map<std::uint32_t, std::vector<Open>> stacks_;      // per thread: open operators
  std::vector<Stats> by_name_;                                       // indexed by NameId
  std::unordered_map<std::uint64_t, InputStats> inputs_;             // (name, inputs) -> stats
  std::unordered_map<std::uint64_t, std::uint64_t> lines_;           // (name, source) -> self ns
  std::unordered_map<NameId, KernelStats> unattributed_;             // kernel name -> stats
  std::vector<CompiledStats> compiled_;                              // compiled kernels
  std::unordered_map<std::uint64_t, std::uint32_t> compiled_index_;  // source -> 1 + index
  std::vector<NameId> chain_;                                        // scratch for charge()
  Stats evicted_;
  std::uint64_t kernels_ = 0, attributed_ = 0, unattributed_kernels_ = 0;
  std::uint64_t direct_ = 0, fused_kernels_ = 0, unnamed_compiled_ = 0;
  std::uint64_t unattributed_copies_ = 0, device_ns_ = 0;
};

}  // namespace pasta::tools

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/tools/detail/op_summary_impl.hpp>
#endif
