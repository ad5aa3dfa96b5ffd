// Where the device time went in the program's own terms: per framework module
// (a PyTorch nn.Module, as torch::Aten names it: "GPT2LMHeadModel.transformer.h.3.attn")
// and per line of the program that called the operators. Each kernel, copy
// and tensor allocation goes to the module of the operator that made it
// (a backward operator's is its forward's), self to that module and total to
// it and every module above it; work outside every module goes to
// "(no module)". Answers "which part of my model is slow, and which line".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <pasta/core/detail/api.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/report.hpp>
#include <pasta/tools/detail/op_table.hpp>

namespace pasta::tools {

class ModuleSummary {
 public:
  static constexpr std::string_view name = "module_summary";
  static constexpr std::string_view no_module = "(no module)";

  struct Stats {  // one module's own work (self); totals are summed at report time
    NameId class_name{}, parent{};
    std::uint32_t depth = 0;
    std::uint64_t calls = 0, host_ns = 0, ops = 0;
    std::uint64_t launches = 0, device_ns = 0, forward_ns = 0, backward_ns = 0;
    std::uint64_t copies = 0, copy_ns = 0;
    std::uint64_t alloc_bytes = 0, peak_bytes = 0;  // peak: the allocator's total at its allocations
    std::unordered_map<NameId, std::uint64_t> sources;  // call sites of its calls -> calls
  };
  struct LineStats {  // one source line's operators, self
    std::uint64_t calls = 0, launches = 0, device_ns = 0;
    std::unordered_map<NameId, std::uint64_t> op_ns, module_ns;  // device time by operator, module
  };
  struct KernelStats {
    std::uint64_t launches = 0, device_ns = 0;
  };

  void on(const ModuleCall& e);
  void on(const OpBegin& e);
  void on(const KernelComplete& e);
  void on(const Memcpy& e) { copy(e.op, duration_ns(e.start_ns, e.end_ns)); }
  void on(const Memset& e) { copy(e.op, duration_ns(e.start_ns, e.end_ns)); }
  void on(const TensorAlloc& e);

  // nullptr if module `module` (its full name) was never seen.
  const Stats* stats(std::string_view module) const;
  // The device time of `module` and every module below it.
  std::uint64_t device_total_ns(std::string_view module) const;
  const LineStats* line(std::string_view source) const;

  void report(Report& out) const;  // tools/detail/module_summary_impl.hpp

 private:
  struct Instance {
    std::uint64_t id = 0;
    NameId module{}, source{}, name{};
    bool backward = false;
  };
  struct Totals {
    std::uint64_t launches = 0, device_ns = 0, forward_ns = 0, backward_ns = 0;
    std::uint64_t alloc_bytes = 0, peak_bytes = 0;
  };

  Stats& at(NameId module);
  // The parent of `module`: from its calls or, for a module only operators
  // named, from its name ("a.b.c" -> "a.b").
  NameId parent_of(NameId module) const;
  std::unordered_map<NameId, Totals> totals() const;
  // report()'s parts: the modules depth first, and its three tables.
  std::vector<NameId> tree_order(const std::unordered_map<NameId, Totals>& total) const;
  void modules_table(Report& out, const std::vector<NameId>& order,
                     const std::unordered_map<NameId, Totals>& total) const;
  void kernels_table(Report& out, const std::vector<NameId>& order) const;
  void lines_table(Report& out) const;
  void copy(std::uint64_t op, std::uint64_t d);

  detail::OpTable<Instance> table_;
  std::unordered_map<NameId, Stats> modules_;  // by module; NameId{} = outside every module
  std::unordered_map<NameId, LineStats> lines_;
  std::unordered_map<NameId, std::unordered_map<NameId, KernelStats>> kernels_;  // module -> kernel
  std::uint64_t kernels_seen_ = 0, kernels_in_module_ = 0, ops_ = 0, ops_in_module_ = 0;
  std::uint64_t ops_with_line_ = 0, device_ns_ = 0;
};

}  // namespace pasta::tools

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/tools/detail/module_summary_impl.hpp>
#endif
