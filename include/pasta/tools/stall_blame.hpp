// Which tensor a stalled warp was waiting for. Two runs of one program:
//
// 1. Sampled (nv::Cupti): PC sampling gives warp stall samples per
//    instruction and reason (StallSample). Stalls on a long scoreboard (the
//    warp waits for a global, local or texture load) are moved to the loads
//    the stalled instruction waits for, read from the kernel's machine code
//    by the Disassembler policy (nv::detail::Nvdisasm: SASS by nvdisasm).
//    Writes <output_dir>/stall_samples.json.
// 2. Instrumented (nv::Sanitizer): accesses per instruction (PcAccessCount)
//    give pc -> allocation or framework tensor, and the operator that
//    launched the kernel. Under proc::GpuBucketing they are counted on the
//    device per (pc, region) for the regions this tool tells apart
//    (access_regions), under proc::Cpu one record per access. With
//    PASTA_STALL_SAMPLES naming run 1's file, each stall is charged to the
//    tensors its load read, in proportion to their accesses at that pc.
//
// With a framework handler (torch::Aten), tensors are the allocator's
// blocks inside its segments, and the views an operator takes as input
// (TensorView) link to the tensor whose storage they read: an access
// inside a view of the launching operator is charged to that view.
//
// The two runs are joined on (kernel name, pc offset within the function),
// which assumes a deterministic program: the same kernels, running the
// same code, touching the same tensors from the same instructions. Kernels
// whose machine code differs between the runs are reported and left out.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <pasta/core/access_regions.hpp>
#include <pasta/core/address_map.hpp>
#include <pasta/core/config.hpp>
#include <pasta/core/detail/demangle.hpp>
#include <pasta/core/detail/files.hpp>
#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/detail/hash.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/report.hpp>
#include <pasta/core/report_writer.hpp>
#include <pasta/nv/detail/nvdisasm.hpp>
#include <pasta/tools/detail/live_ops.hpp>
#include <pasta/tools/detail/stall_forest.hpp>
#include <pasta/tools/detail/stall_join.hpp>
#include <pasta/tools/detail/units.hpp>
#include <pasta/tools/detail/stall_samples.hpp>
#include <pasta/tools/detail/stall_targets.hpp>

namespace pasta::tools {

// What the tool asks of its Disassembler (see nv::detail::Nvdisasm): built
// from the Config; locate() the disassembler (empty: none); for a kernel's
// code, its instructions (pc, opcode), the one at a pc, and the loads a
// memory-dependency stall there waits for (all; those whose registers it
// reads); for_each_kernel(image, f(kernel, arch, code)) of a module image.
template <class D>
concept StallDisassembler = std::constructible_from<D, const Config&> &&
    requires(const D d, std::span<const std::byte> code,
             const std::vector<typename D::Instruction>& instructions, std::string& error) {
  { d.locate() } -> std::convertible_to<std::string>;
  { D::not_found } -> std::convertible_to<std::string_view>;
  {
    D::disassemble(code, 0u, d.locate(), error)
    } -> std::same_as<std::vector<typename D::Instruction>>;
  { D::at(instructions, 0)->opcode } -> std::convertible_to<std::string>;
  { D::waits_for(instructions, 0).all } -> std::convertible_to<std::vector<std::uint64_t>>;
  { D::waits_for(instructions, 0).reads } -> std::convertible_to<std::vector<std::uint64_t>>;
};

template <StallDisassembler Disassembler>
class BasicStallBlame {
 public:
  static constexpr std::string_view name = "stall_blame";
  static constexpr std::string_view schema = pasta::detail::stall::schema;
  static constexpr int schema_version = pasta::detail::stall::schema_version;
  static constexpr std::string_view samples_file = pasta::detail::stall::samples_file;

  explicit BasicStallBlame(const Config& cfg)
      : output_dir_(cfg.output_dir), samples_path_(cfg.stall_samples), disassembler_(cfg) {}

  // Both runs: each kernel's machine code, to disassemble (run 1) and to
  // check that the two runs ran the same code.
  void on(const ModuleImage& e) {
    if (!e.image || !e.image_bytes) return;
    Disassembler::for_each_kernel(
        std::span<const std::byte>(e.image, e.image_bytes),
        [&](std::string_view kernel, unsigned arch, std::span<const std::byte> code) {
          if (code.empty()) return;
          Code& c = code_[std::string(kernel)];
          c.hash = pasta::detail::fnv_bytes(code);
          c.arch = arch;
          // Kept to disassemble, unless this is the run that joins.
          if (samples_path_.empty()) c.bytes.assign(code.begin(), code.end());
        });
  }

  // Run 1.
  void on(const StallSample& e) {
    sampled_ = true;
    // A reason's not-issued samples are a subset of its samples.
    if (pasta::detail::stall::not_issued(name_of(e.reason))) return;
    total_samples_ += e.samples;
    samples_[{e.function, e.pc}][e.reason] += e.samples;
  }

  // Run 2.
  void on(const OpBegin& e) { ops_.on(e); }
  void on(const OpEnd& e) {
    ops_.on(e);
    op_views_.erase(e.id);
  }
  // A launch sees the views of every operator open on its thread.
  void on(const KernelLaunch& e) {
    Launch l{e.name, ops_.innermost(e.thread), static_cast<std::uint32_t>(launch_views_.size()), 0};
    ops_.for_each_open(e.thread, [&](std::uint64_t op) {
      if (const auto it = op_views_.find(op); it != op_views_.end())
        launch_views_.insert(launch_views_.end(), it->second.begin(), it->second.end());
    });
    l.views_end = static_cast<std::uint32_t>(launch_views_.size());
    launches_[e.correlation] = l;
  }
  void on(const MemAlloc& e) {
    allocations_.insert(
        Target::Range{e.address, e.bytes, targets_.add({.base = e.address, .bytes = e.bytes})});
  }
  void on(const MemFree& e) { allocations_.erase(e.address); }
  void on(const pasta::TensorAlloc& e) {
    if (e.device == host_device) return;
    const auto* segment = allocations_.find(e.address);
    tensors_.insert(Target::Range{e.address, e.bytes,
                                  targets_.add({.base = e.address,
                                                .bytes = e.bytes,
                                                .op = ops_.name(e.thread, e.op),
                                                .source = ops_.source(e.thread, e.op),
                                                .kind = Target::tensor,
                                                .parent = segment ? segment->index : no_target})});
  }
  void on(const pasta::TensorView& e) {
    if (e.device == host_device || !e.element_bytes) return;
    const auto* storage = tensors_.find(e.address);
    if (!storage) return;  // its storage was not seen allocated: nothing to link it to
    const auto [it, fresh] = views_.try_emplace(ViewKey{storage->index, e.address, e.layout}, 0);
    if (fresh) {
      Target v{.base = e.address,
               .bytes = e.bytes,
               .kind = Target::view,
               .parent = storage->index,
               .layout = e.layout,
               .element_bytes = e.element_bytes};
      v.nested = pasta::detail::nested_dims(name_of(e.layout), v.dims);
      it->second = targets_.add(std::move(v));
    }
    auto& list = op_views_[e.op];
    if (std::find(list.begin(), list.end(), it->second) == list.end()) list.push_back(it->second);
  }
  void on(const pasta::TensorFree& e) { tensors_.erase(e.address); }

  // What a launch's accesses resolve to: every allocation and tensor, and
  // the views of its operators, strided ones element by element.
  void access_regions(std::uint64_t correlation, AccessRegions& out) const {
    allocations_.for_each([&](const Target::Range& r) { out.range(r.base, r.bytes); });
    tensors_.for_each([&](const Target::Range& r) { out.range(r.base, r.bytes); });
    const auto it = launches_.find(correlation);
    if (it == launches_.end()) return;
    for (std::uint32_t i = it->second.views_begin; i < it->second.views_end; ++i) {
      const Target& v = targets_[launch_views_[i]];
      if (v.nested)
        out.strided(v.base, v.bytes, v.element_bytes, v.dims);
      else
        out.range(v.base, v.bytes);
    }
  }

  void on(const PcAccessCount& e) {
    accesses_seen_ += e.count;
    if (e.correlation != last_correlation_) {
      last_correlation_ = e.correlation;
      const auto it = launches_.find(e.correlation);
      last_launch_ = it == launches_.end() ? Launch{} : it->second;
    }
    if (!last_launch_.kernel) return;
    std::uint32_t target = no_target;
    if (e.space == MemSpace::global) {
      if (const auto* t = tensors_.find(e.address)) {
        const std::uint32_t* views = launch_views_.data();
        target =
            targets_.view_at(t->index, e.address,
                             {views + last_launch_.views_begin, views + last_launch_.views_end});
      } else if (const auto* a = allocations_.find(e.address)) {
        target = a->index;
      }
    }
    // A warp's accesses come pc by pc: the last pc's row is kept.
    const SampleKey key{last_launch_.kernel, e.pc};
    if (!last_targets_ || key != last_key_) {
      last_key_ = key;
      last_targets_ = &accesses_[key];
    }
    (*last_targets_)[{target, last_launch_.op}] += e.count;
  }

  void report(Report& out) const {
    if (sampled_)
      pasta::detail::stall::report_sampled(out, disassembler_, samples_, code_, total_samples_,
                                           output_dir_);
    if (accesses_seen_) {
      write_accesses(out);
      report_blame(out);
    }
    if (!sampled_ && !accesses_seen_)
      out.note(
          "no stall samples and no memory accesses reached this tool: it needs a PC-sampling "
          "handler (nv::Cupti) for run 1 or a memory-access pipeline (nv::Sanitizer) for run 2; "
          "`pasta run -t stall_blame` runs both");
  }

  // Samples of the instructions of one kernel, as run 1 saw them.
  std::uint64_t samples_at(std::string_view kernel, std::uint64_t pc,
                           std::string_view reason) const {
    for (const auto& [key, reasons] : samples_)
      if (key.pc == pc && name_of(key.function) == kernel)
        for (const auto& [r, n] : reasons)
          if (name_of(r) == reason) return n;
    return 0;
  }

 private:
  static constexpr std::uint32_t no_target = pasta::detail::stall::no_target;
  // Rows a blame table shows before it sums the rest; children a forest
  // node keeps, and the share of all samples a kept one holds at least.
  static constexpr std::size_t table_rows = 25, forest_children = 6;
  static constexpr double forest_min_share = 0.005;
  using AccessKey = pasta::detail::stall::AccessKey;
  using Accesses = pasta::detail::stall::Accesses;
  using Target = pasta::detail::stall::Target;
  using Code = pasta::detail::stall::KernelCode;
  using SampleKey = pasta::detail::stall::SampleKey;

  struct ViewKey {
    std::uint32_t storage;
    std::uint64_t address;
    NameId layout;
    friend auto operator<=>(const ViewKey&, const ViewKey&) = default;
  };
  struct Launch {
    NameId kernel{}, op{};
    std::uint32_t views_begin = 0, views_end = 0;  // its operators' views in launch_views_
  };

  using Blamed = decltype(pasta::detail::stall::Blame::blamed);
  void report_blame(Report& out) const;
  Table blame_tables(Report& out, const Blamed& blamed, double total) const;
  void write_forest(Report& out, const pasta::detail::BlameNode& forest, const Table& all,
                    double total) const;
  static void report_unseen_loads(Report& out,
                                  const std::vector<pasta::detail::stall::SampledKernel>& sampled);
  void write_accesses(Report& out) const;

  std::string output_dir_, samples_path_;
  Disassembler disassembler_;
  std::map<std::string, Code> code_;
  bool sampled_ = false;
  std::uint64_t total_samples_ = 0;
  pasta::detail::stall::Samples samples_;

  pasta::detail::LiveOps ops_;
  std::unordered_map<std::uint64_t, Launch> launches_;
  pasta::detail::stall::Targets targets_;
  BasicAddressMap<Target::Range> allocations_, tensors_;
  std::map<ViewKey, std::uint32_t> views_;
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> op_views_;  // open operators'
  std::vector<std::uint32_t> launch_views_;
  std::uint64_t accesses_seen_ = 0, last_correlation_ = ~0ull;
  Launch last_launch_;
  std::map<SampleKey, Accesses> accesses_;
  SampleKey last_key_{};
  Accesses* last_targets_ = nullptr;  // accesses_[last_key_]
};

// Run 2: what each instruction accessed, one row per (kernel, pc, target,
// operator), to <output_dir>/stall_blame.accesses.csv.
template <StallDisassembler Disassembler>
void BasicStallBlame<Disassembler>::write_accesses(Report& out) const {
  Table t("accesses", "Accesses per instruction",
          {"kernel", "pc", "target", "operator", "accesses"});
  for (const auto& [at, targets] : accesses_)
    for (const auto& [key, n] : targets)
      t.row(std::string(name_of(at.function)), fmt::format("{:#x}", at.pc),
            targets_.label(key.target), pasta::detail::LiveOps::label(key.op), n);
  const std::string path = pasta::detail::join_path(output_dir_, "stall_blame.accesses.csv");
  std::string why = pasta::detail::make_dirs(output_dir_);
  if (why.empty()) why = pasta::detail::write_file(path, pasta::detail::to_csv(t));
  if (why.empty())
    out.attach(path);
  else
    out.mark_partial("the accesses per instruction were not written: " + why);
}

// Rows of `order` (largest first) in t: the first `shown`, each its leading
// cells (`cells(key)`), samples and share of `total`, then one row that sums
// the rest ("(N more)", then `blanks` empty cells).
template <class Order, class Cells>
void ranked_rows(Table& t, const Order& order, std::size_t shown, double total, std::size_t blanks,
                 Cells&& cells) {
  const auto share = [&](double n) { return pasta::detail::share_of(n, total); };
  double beyond = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& [key, n] = order[i];
    if (i >= shown) {
      beyond += n;
      continue;
    }
    std::vector<Cell> row = cells(key);
    row.emplace_back(n);
    row.emplace_back(share(n));
    t.row(std::move(row));
  }
  if (order.size() <= shown) return;
  std::vector<Cell> row{fmt::format("({} more)", order.size() - shown)};
  for (std::size_t i = 0; i < blanks; ++i) row.emplace_back(std::string());
  row.emplace_back(beyond);
  row.emplace_back(share(beyond));
  t.row(std::move(row));
}

// Run 2: run 1's stalls charged to the tensors their loads read.
template <StallDisassembler Disassembler>
void BasicStallBlame<Disassembler>::report_blame(Report& out) const {
  out.summary("accesses recorded", accesses_seen_);
  out.summary("instructions that accessed memory", accesses_.size());
  if (samples_path_.empty()) {
    out.note(
        "PASTA_STALL_SAMPLES names no sampled run, so there is nothing to join: `pasta run -t "
        "stall_blame` runs the sampled run first and sets it");
    return;
  }
  const std::string text = pasta::detail::read_file(samples_path_);
  const auto doc = nlohmann::json::parse(text, nullptr, false);
  if (const std::string why = pasta::detail::stall::unreadable(samples_path_, text, doc);
      !why.empty()) {
    out.mark_partial(why);
    return;
  }
  pasta::detail::stall::AccessesAt at_pc;
  for (const auto& [key, targets] : accesses_) at_pc[{name_of(key.function), key.pc}] = &targets;
  std::map<std::string, std::string, std::less<>> code;
  for (const auto& [kernel, c] : code_) code[kernel] = pasta::detail::stall::code_hash(c.hash);
  const double total = doc.value("samples", 0.0);
  const auto sampled = pasta::detail::stall::sampled_kernels(doc["functions"]);
  const auto blame = pasta::detail::stall::join(sampled, at_pc, code);
  const Table all = blame_tables(out, blame.blamed, total);
  auto& rest = out.table("unattributed", "Stall samples not blamed on a tensor",
                         {"why", "stall_samples", "share"});
  rest.precision(1, 1).precision(2, 4);
  for (const auto& [why, n] : blame.unattributed) rest.row(why, n, pasta::detail::share_of(n, total));
  report_unseen_loads(out, sampled);
  if (!blame.changed.empty()) {
    auto& t = out.table("code_changed", "Kernels whose machine code differs between the runs",
                        {"kernel"});
    for (const auto& k : blame.changed) t.row(k);
    out.note(fmt::format(
        "{} kernels ran different machine code in the two runs (a JIT, autotuning or a changed "
        "build): their stalls are not blamed",
        blame.changed.size()));
  }
  double blamed_total = 0;
  for (const auto& [key, n] : blame.blamed) blamed_total += n;
  out.summary("stall samples (sampled run)", total);
  out.summary("blamed on tensors", blamed_total);
  out.summary("blamed share", pasta::detail::share_of(blamed_total, total));
  pasta::detail::BlameNode forest = pasta::detail::stall::blame_forest(blame.blamed, targets_);
  // Readable at model scale: the forest keeps each node's largest children.
  pasta::detail::stall::prune(forest, forest_children, forest_min_share * total);
  write_forest(out, forest, all, total);
}

// The blame tables: per tensor and operator, per operator, per kernel (the
// largest rows, the rest summed in one); returns every (tensor, operator)
// row, for stall_blame.blame_all.csv.
template <StallDisassembler Disassembler>
Table BasicStallBlame<Disassembler>::blame_tables(Report& out, const Blamed& blamed,
                                                  double total) const {
  using pasta::detail::LiveOps;
  using pasta::detail::stall::largest_first;
  std::map<AccessKey, double> per_target_op;
  for (const auto& [key, n] : blamed) per_target_op[key.first] += n;
  const auto order = largest_first(per_target_op);
  const std::vector<std::string> columns{"tensor", "operator", "stall_samples", "share"};
  Table all("blame_all", "Stall samples blamed on tensors", columns);
  for (const auto& [k, n] : order)
    all.row(targets_.label(k.target), LiveOps::label(k.op), n, pasta::detail::share_of(n, total));
  auto& table = out.table("blame", "Stall samples blamed on tensors", columns);
  table.precision(2, 1).precision(3, 4);
  ranked_rows(table, order, table_rows, total, 1, [&](const AccessKey& k) {
    return std::vector<Cell>{targets_.label(k.target), LiveOps::label(k.op)};
  });
  // Operators grouped: every tensor an operator's loads waited for.
  std::map<NameId, double> op_samples;
  std::map<NameId, std::size_t> op_tensors;
  for (const auto& [k, n] : per_target_op) {
    op_samples[k.op] += n;
    ++op_tensors[k.op];
  }
  auto& ops = out.table("blame_operators", "Stall samples blamed on tensors, per operator",
                        {"operator", "tensors", "stall_samples", "share"});
  ops.precision(2, 1).precision(3, 4);
  ranked_rows(ops, largest_first(op_samples), table_rows, total, 1, [&](NameId op) {
    return std::vector<Cell>{LiveOps::label(op), op_tensors[op]};
  });
  auto& kernels = out.table("blame_kernels", "Stall samples blamed on tensors, per kernel",
                            {"tensor", "operator", "kernel", "stall_samples", "share"});
  kernels.precision(3, 1).precision(4, 4);
  ranked_rows(kernels, largest_first(blamed), table_rows, total, 2, [&](const auto& k) {
    return std::vector<Cell>{
        targets_.label(k.first.target), LiveOps::label(k.first.op),
        pasta::detail::short_kernel_name(pasta::detail::demangle(k.second))};
  });
  out.summary("tensor and operator pairs blamed", order.size());
  return all;
}

// The forest (DOT and SVG) and every blame row (CSV) beside the reports.
template <StallDisassembler Disassembler>
void BasicStallBlame<Disassembler>::write_forest(Report& out, const pasta::detail::BlameNode& forest,
                                                 const Table& all, double total) const {
  const std::string dot = pasta::detail::join_path(output_dir_, "stall_blame.forest.dot");
  const std::string svg = pasta::detail::join_path(output_dir_, "stall_blame.forest.svg");
  const std::string csv = pasta::detail::join_path(output_dir_, "stall_blame.blame_all.csv");
  std::string why = pasta::detail::make_dirs(output_dir_);
  if (why.empty()) why = pasta::detail::write_file(dot, pasta::detail::forest_dot(forest, total));
  if (why.empty()) why = pasta::detail::write_file(svg, pasta::detail::forest_svg(forest, total));
  if (why.empty()) why = pasta::detail::write_file(csv, pasta::detail::to_csv(all));
  if (why.empty()) {
    out.attach(dot);
    out.attach(svg);
    out.attach(csv);
  } else {
    out.mark_partial("the blame forest was not written: " + why);
  }
}

// The kernels of run 1 whose code holds loads no access patch sees (run 1's
// file gives each one's count): stalls waiting on them cannot be blamed.
template <StallDisassembler Disassembler>
void BasicStallBlame<Disassembler>::report_unseen_loads(
    Report& out, const std::vector<pasta::detail::stall::SampledKernel>& sampled) {
  std::string_view what = "loads the access patches do not see";
  if constexpr (requires { Disassembler::unseen_loads_are; }) what = Disassembler::unseen_loads_are;
  std::vector<std::tuple<std::string, std::uint64_t, std::uint64_t>> rows;
  for (const auto& k : sampled) {
    if (k.unseen_loads == 0) continue;
    double samples = 0;  // run 1 writes whole counts
    for (const auto& pc : k.pcs)
      for (const auto& [reason, n] : pc.reasons) samples += n;
    rows.emplace_back(k.name, k.unseen_loads, static_cast<std::uint64_t>(samples));
  }
  if (rows.empty()) return;
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::get<2>(a) != std::get<2>(b) ? std::get<2>(a) > std::get<2>(b)
                                            : std::get<0>(a) < std::get<0>(b);
  });
  auto& t = out.table("unseen_loads", fmt::format("Kernels loading through {}", what),
                      {"kernel", "unseen_loads", "stall_samples"});
  for (const auto& [kernel, loads, samples] : rows)
    t.row(pasta::detail::short_kernel_name(pasta::detail::demangle(kernel)), loads, samples);
  out.summary("kernels with loads the access run cannot see", rows.size());
  out.note(fmt::format(
      "{} kernels load through {}, which the Compute Sanitizer cannot patch: stalls waiting on "
      "those loads are not blamed on a tensor (table unseen_loads)",
      rows.size(), what));
}

using StallBlame = BasicStallBlame<nv::detail::Nvdisasm>;

}  // namespace pasta::tools

// A program linked to pasta::runtime (which defines PASTA_RUNTIME_TEMPLATES for it) uses
// StallBlame's report code compiled there once (src/runtime.cpp) instead of compiling it
// in each unit: the report, the join and the sampled run's file are most of a pipeline's code.
#ifdef PASTA_RUNTIME_TEMPLATES
extern template class pasta::tools::BasicStallBlame<pasta::nv::detail::Nvdisasm>;
extern template void pasta::detail::stall::report_sampled<pasta::nv::detail::Nvdisasm>(
    pasta::Report&, const pasta::nv::detail::Nvdisasm&, const pasta::detail::stall::Samples&,
    const std::map<std::string, pasta::detail::stall::KernelCode>&, std::uint64_t,
    const std::string&);
#endif
