// Which tensor a stalled warp was waiting for. Two runs of one program:
//
// 1. Sampled (nv::Cupti): PC sampling gives warp stall samples per
//    instruction and reason (StallSample). Stalls on a long scoreboard (the
//    warp waits for a global, local or texture load) are moved to the loads
//    the stalled instruction waits for, read from the kernel's SASS
//    (detail/sass.hpp, nvdisasm). Writes <output_dir>/stall_samples.json.
// 2. Instrumented (nv::Sanitizer with proc::Cpu): every access with its pc
//    and address (MemAccess) gives pc -> allocation or framework tensor, and
//    the operator that launched the kernel. With PASTA_STALL_SAMPLES naming
//    run 1's file, each stall is charged to the tensors its load read, in
//    proportion to their accesses at that pc.
//
// The two runs are joined on (kernel name, pc offset within the function),
// which assumes a deterministic program: the same kernels, running the
// same code, touching the same tensors from the same instructions. Kernels
// whose machine code differs between the runs are reported and left out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <pasta/core/address_map.hpp>
#include <pasta/core/config.hpp>
#include <pasta/core/detail/demangle.hpp>
#include <pasta/core/detail/files.hpp>
#include <pasta/core/detail/hash.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/report.hpp>
#include <pasta/nv/detail/cubin.hpp>
#include <pasta/tools/detail/live_ops.hpp>
#include <pasta/tools/detail/sass.hpp>

namespace pasta::tools {

class StallBlame {
 public:
  static constexpr std::string_view name = "stall_blame";
  static constexpr std::string_view schema = "pasta.stall_samples";
  static constexpr int schema_version = 1;
  static constexpr std::string_view samples_file = "stall_samples.json";

  explicit StallBlame(const Config& cfg)
      : output_dir_(cfg.output_dir), samples_path_(cfg.stall_samples), nvdisasm_(cfg.nvdisasm) {}

  // Both runs: each kernel's machine code, to disassemble (run 1) and to
  // check that the two runs ran the same code.
  void on(const ModuleImage& e) {
    if (!e.image || !e.image_bytes) return;
    const std::span<const std::byte> image(e.image, e.image_bytes);
    const unsigned sm = nv::detail::sm_of(image);
    nv::detail::for_each_kernel_code(image,
                                     [&](std::string_view kernel, std::span<const std::byte> code) {
                                       if (code.empty()) return;
                                       Code& c = code_[std::string(kernel)];
                                       c.hash = pasta::detail::fnv_bytes(code);
                                       c.sm = sm;
                                       // Kept to disassemble, unless this is the run that joins.
                                       if (samples_path_.empty())
                                         c.bytes.assign(code.begin(), code.end());
                                     });
  }

  // Run 1.
  void on(const StallSample& e) {
    sampled_ = true;
    if (not_issued(name_of(e.reason))) return;  // a subset of the same samples
    total_samples_ += e.samples;
    samples_[{e.function, e.pc}][e.reason] += e.samples;
  }

  // Run 2.
  void on(const OpBegin& e) { ops_.on(e); }
  void on(const OpEnd& e) { ops_.on(e); }
  void on(const KernelLaunch& e) { launches_[e.correlation] = {e.name, ops_.innermost(e.thread)}; }
  void on(const MemAlloc& e) {
    allocations_.insert(
        Target::Range{e.address, e.bytes, add_target(e.address, e.bytes, {}, false)});
  }
  void on(const MemFree& e) { allocations_.erase(e.address); }
  void on(const pasta::TensorAlloc& e) {
    if (e.device == host_device) return;
    tensors_.insert(Target::Range{e.address, e.bytes,
                                  add_target(e.address, e.bytes, ops_.name(e.thread, e.op), true)});
  }
  void on(const pasta::TensorFree& e) { tensors_.erase(e.address); }
  void on(const MemAccess& e) {
    ++accesses_seen_;
    if (e.correlation != last_correlation_) {
      last_correlation_ = e.correlation;
      const auto it = launches_.find(e.correlation);
      last_launch_ = it == launches_.end() ? Launch{} : it->second;
    }
    if (!last_launch_.kernel) return;
    std::uint32_t target = no_target;
    if (e.space == MemSpace::global) {
      if (const auto* t = tensors_.find(e.address))
        target = t->index;
      else if (const auto* a = allocations_.find(e.address))
        target = a->index;
    }
    // A warp's accesses come pc by pc: the last pc's row is kept.
    const SampleKey key{last_launch_.kernel, e.pc};
    if (!last_targets_ || key != last_key_) {
      last_key_ = key;
      last_targets_ = &accesses_[key];
    }
    ++(*last_targets_)[{target, last_launch_.op}];
  }

  void report(Report& out) const {
    if (sampled_) report_samples(out);
    if (accesses_seen_) report_blame(out);
    if (!sampled_ && !accesses_seen_)
      out.note(
          "no stall samples and no memory accesses reached this tool: it needs a PC-sampling "
          "handler (nv::Cupti) for run 1 or a memory-access pipeline (nv::Sanitizer with "
          "proc::Cpu) for run 2; `pasta run -t stall_blame` runs both");
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
  static constexpr std::uint32_t no_target = ~0u;

  struct Code {
    std::uint64_t hash = 0;
    unsigned sm = 0;
    std::vector<std::byte> bytes;  // empty in the run that joins
  };
  struct Target {
    struct Range {
      std::uint64_t base = 0, bytes = 0;
      std::uint32_t index = 0;
    };
    std::uint64_t base = 0, bytes = 0;
    NameId op{};  // the allocating operator (tensors)
    bool tensor = false;
    std::uint64_t n = 0;  // 1 for the first target of its kind
  };
  struct SampleKey {
    NameId function{};
    std::uint64_t pc = 0;
    friend auto operator<=>(const SampleKey&, const SampleKey&) = default;
  };
  struct Launch {
    NameId kernel{}, op{};
  };
  struct AccessKey {
    std::uint32_t target;
    NameId op;
    friend auto operator<=>(const AccessKey&, const AccessKey&) = default;
  };

  static bool not_issued(std::string_view reason) { return reason.ends_with("_not_issued"); }
  static bool memory_dependency(std::string_view reason) {
    return reason.find("long_scoreboard") != std::string_view::npos;
  }
  static std::string hex(std::uint64_t v) { return fmt::format("{:016x}", v); }

  std::uint32_t add_target(std::uint64_t base, std::uint64_t bytes, NameId op, bool tensor) {
    targets_.push_back({base, bytes, op, tensor, tensor ? ++tensor_count_ : ++alloc_count_});
    return static_cast<std::uint32_t>(targets_.size() - 1);
  }
  std::string target_label(std::uint32_t t) const {
    if (t == no_target) return "(no allocation: shared, local or unknown memory)";
    const Target& x = targets_[t];
    if (x.tensor)
      return fmt::format("tensor #{} ({} B, {})", x.n, x.bytes,
                         pasta::detail::LiveOps::label(x.op));
    return fmt::format("allocation #{} ({} B at 0x{:x})", x.n, x.bytes, x.base);
  }
  // The allocation holding a tensor, for the forest; no_target if none.
  std::uint32_t parent_of(std::uint32_t t) const {
    if (t == no_target || !targets_[t].tensor) return no_target;
    for (std::uint32_t i = 0; i < targets_.size(); ++i) {
      const Target& a = targets_[i];
      if (!a.tensor && targets_[t].base >= a.base && targets_[t].base - a.base < a.bytes) return i;
    }
    return no_target;
  }

  void report_samples(Report& out) const;
  void report_blame(Report& out) const;

  std::string output_dir_, samples_path_, nvdisasm_;
  std::map<std::string, Code> code_;
  bool sampled_ = false;
  std::uint64_t total_samples_ = 0;
  std::map<SampleKey, std::map<NameId, std::uint64_t>> samples_;

  pasta::detail::LiveOps ops_;
  std::unordered_map<std::uint64_t, Launch> launches_;
  std::vector<Target> targets_;
  std::uint64_t tensor_count_ = 0, alloc_count_ = 0;
  BasicAddressMap<Target::Range> allocations_, tensors_;
  std::uint64_t accesses_seen_ = 0, last_correlation_ = ~0ull;
  Launch last_launch_;
  std::map<SampleKey, std::map<AccessKey, std::uint64_t>> accesses_;
  SampleKey last_key_{};
  std::map<AccessKey, std::uint64_t>* last_targets_ = nullptr;  // accesses_[last_key_]
};

// Run 1: the stalls per instruction, with the loads each memory-dependency
// stall waits for, written for run 2.
inline void StallBlame::report_samples(Report& out) const {
  const std::string nvdisasm = pasta::detail::sass::find_nvdisasm(nvdisasm_);
  std::map<NameId, std::uint64_t> by_reason;
  std::map<std::string, std::vector<pasta::detail::sass::Instruction>> sass;
  std::vector<std::string> problems;
  nlohmann::json functions = nlohmann::json::object();
  std::uint64_t moved = 0, unmoved = 0;
  auto& top = out.table("stalls", "Stall samples per instruction",
                        {"kernel", "pc", "opcode", "reason", "samples", "waits_for"});
  struct Row {
    std::string kernel, opcode, reason, waits;
    std::uint64_t pc, samples;
  };
  std::vector<Row> rows;
  for (const auto& [key, reasons] : samples_) {
    const std::string kernel(name_of(key.function));
    auto& f = functions[kernel];
    const auto code = code_.find(kernel);
    if (!f.contains("code")) {
      f["code"] = code == code_.end() ? "" : hex(code->second.hash);
      f["pcs"] = nlohmann::json::array();
    }
    const std::vector<pasta::detail::sass::Instruction>* instructions = nullptr;
    bool needs_sass = false;
    for (const auto& [r, n] : reasons) needs_sass |= memory_dependency(name_of(r));
    if (code != code_.end() && !code->second.bytes.empty() && !nvdisasm.empty() &&
        (needs_sass || sass.count(kernel))) {
      auto [it, fresh] = sass.try_emplace(kernel);
      if (fresh) {
        std::string why;
        it->second =
            pasta::detail::sass::disassemble(code->second.bytes, code->second.sm, nvdisasm, why);
        if (!why.empty()) problems.push_back(fmt::format("{}: {}", kernel, why));
      }
      instructions = &it->second;
    }
    pasta::detail::sass::Producers waits;
    std::string opcode;
    if (instructions) {
      waits = pasta::detail::sass::producers(*instructions, key.pc);
      if (const auto* i = pasta::detail::sass::find(*instructions, key.pc)) opcode = i->opcode;
    }
    nlohmann::json pc{{"pc", key.pc},
                      {"reasons", nlohmann::json::object()},
                      {"waits_for", waits.all},
                      {"reads", waits.reads}};
    if (!opcode.empty()) pc["opcode"] = opcode;
    for (const auto& [r, n] : reasons) {
      pc["reasons"][std::string(name_of(r))] = n;
      by_reason[r] += n;
      if (memory_dependency(name_of(r))) (waits.all.empty() ? unmoved : moved) += n;
      std::string list;
      for (std::uint64_t w : waits.all) list += fmt::format("{}0x{:x}", list.empty() ? "" : " ", w);
      rows.push_back({kernel, opcode, std::string(name_of(r)), list, key.pc, n});
    }
    f["pcs"].push_back(std::move(pc));
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.samples != b.samples ? a.samples > b.samples : a.pc < b.pc;
  });
  for (const Row& r : rows)
    top.row(pasta::detail::short_kernel_name(pasta::detail::demangle(r.kernel)),
            fmt::format("0x{:x}", r.pc), r.opcode, r.reason, r.samples, r.waits);
  auto& reasons = out.table("reasons", "Stall samples per reason", {"reason", "samples", "share"});
  std::vector<std::pair<NameId, std::uint64_t>> order(by_reason.begin(), by_reason.end());
  std::sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.second > b.second; });
  for (const auto& [r, n] : order)
    reasons.row(std::string(name_of(r)), n, total_samples_ ? double(n) / total_samples_ : 0.0);
  out.summary("stall samples", total_samples_);
  out.summary("memory-dependency samples moved to their load", moved);
  if (unmoved)
    out.note(fmt::format(
        "{} memory-dependency samples stay at the stalled instruction: {}", unmoved,
        nvdisasm.empty() ? "nvdisasm was not found (set PASTA_NVDISASM or put the CUDA "
                           "toolkit's bin on PATH)"
                         : "no load feeding them was found in the SASS, or the kernel's code "
                           "was not seen loading"));
  for (const auto& p : problems) out.note(p);

  nlohmann::json doc{{"schema", schema},
                     {"version", schema_version},
                     {"samples", total_samples_},
                     {"nvdisasm", nvdisasm},
                     {"functions", std::move(functions)}};
  const std::string path = pasta::detail::join_path(output_dir_, samples_file);
  std::string why = pasta::detail::make_dirs(output_dir_);
  if (why.empty()) why = pasta::detail::write_file(path, doc.dump(1));
  if (why.empty())
    out.attach(path);
  else
    out.mark_partial(fmt::format("{} not written: {}", samples_file, why));
}

}  // namespace pasta::tools

namespace pasta::detail {

// The blame forest: allocations (the allocator's segments) hold tensors,
// and each tensor's stalls split over the operators (or kernels) whose
// loads waited for it. Nodes are sized by their share of the samples.
struct BlameNode {
  std::string label;
  double samples = 0;
  std::vector<BlameNode> children;
  BlameNode& child(const std::string& l) {
    for (auto& c : children)
      if (c.label == l) return c;
    children.push_back({l, 0, {}});
    return children.back();
  }
  void sort() {
    std::sort(children.begin(), children.end(),
              [](const BlameNode& a, const BlameNode& b) { return a.samples > b.samples; });
    for (auto& c : children) c.sort();
  }
};

inline std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

inline std::string forest_dot(const BlameNode& root, double total) {
  std::string out = "digraph stall_blame {\n  rankdir=LR;\n  node [shape=box, style=filled];\n";
  int next = 0;
  auto visit = [&](auto& self, const BlameNode& n, int parent) -> void {
    const int id = next++;
    const double share = total > 0 ? n.samples / total : 0;
    std::string label = n.label;
    for (std::size_t i = 0; (i = label.find('"', i)) != std::string::npos; i += 2)
      label.insert(i, "\\");
    out += fmt::format(
        "  n{} [label=\"{}\\n{:.0f} samples ({:.1f}%)\", width={:.2f}, fontsize={:.0f}, "
        "fillcolor=\"0.0 {:.2f} 1.0\"];\n",
        id, label, n.samples, 100 * share, 1.0 + 6 * share, 10 + 14 * share, 0.1 + 0.9 * share);
    if (parent >= 0) out += fmt::format("  n{} -> n{};\n", parent, id);
    for (const auto& c : n.children) self(self, c, id);
  };
  for (const auto& c : root.children) visit(visit, c, -1);
  return out + "}\n";
}

// An icicle picture of the forest: one row per level, each node as wide as
// its share of the samples.
inline std::string forest_svg(const BlameNode& root, double total) {
  constexpr double width = 1200, row = 40, pad = 2;
  int depth = 0;
  auto measure = [&](auto& self, const BlameNode& n, int d) -> void {
    depth = std::max(depth, d);
    for (const auto& c : n.children) self(self, c, d + 1);
  };
  measure(measure, root, 0);
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<text x=\"4\" y=\"16\">Stall samples blamed on allocations, tensors and operators "
      "({:.0f} samples; width = share)</text>\n",
      width, row * depth + 30, total);
  auto draw = [&](auto& self, const BlameNode& n, int d, double x) -> void {
    double cx = x;
    for (const auto& c : n.children) {
      const double w = total > 0 ? width * c.samples / total : 0;
      if (w >= 1) {
        const double y = 24 + row * d;
        const double heat = total > 0 ? c.samples / total : 0;
        out += fmt::format(
            "<g><title>{} - {:.0f} samples ({:.1f}%)</title><rect x=\"{:.1f}\" y=\"{:.1f}\" "
            "width=\"{:.1f}\" height=\"{:.1f}\" fill=\"hsl(10,{:.0f}%,60%)\" stroke=\"white\"/>",
            xml_escape(c.label), c.samples, 100 * heat, cx, y, std::max(w - pad, 1.0), row - pad,
            20 + 80 * heat);
        const std::size_t chars = static_cast<std::size_t>(w / 7);
        if (chars >= 4)
          out += fmt::format(
              "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", cx + 3, y + row / 2 + 4,
              xml_escape(c.label.size() > chars ? c.label.substr(0, chars - 1) + "~" : c.label));
        out += "</g>\n";
        self(self, c, d + 1, cx);
      }
      cx += w;
    }
  };
  draw(draw, root, 0, 0);
  return out + "</svg>\n";
}

}  // namespace pasta::detail

namespace pasta::tools {

// Run 2: run 1's stalls charged to the tensors their loads read.
inline void StallBlame::report_blame(Report& out) const {
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
  if (text.empty() || doc.is_discarded() || !doc.is_object() ||
      doc.value("schema", std::string()) != schema || !doc.contains("functions") ||
      !doc["functions"].is_object()) {
    out.mark_partial(fmt::format(
        "PASTA_STALL_SAMPLES={}: {}", samples_path_,
        text.empty() ? "cannot be read" : "not a stall_samples.json (schema pasta.stall_samples)"));
    return;
  }
  if (doc.value("version", 0) > schema_version) {
    out.mark_partial(fmt::format("{}: version {} is newer than this pasta reads ({})",
                                 samples_path_, doc.value("version", 0), schema_version));
    return;
  }
  std::map<std::pair<std::string_view, std::uint64_t>, const std::map<AccessKey, std::uint64_t>*>
      at_pc;
  std::set<std::string_view> ran;
  for (const auto& [key, targets] : accesses_) {
    at_pc[{name_of(key.function), key.pc}] = &targets;
    ran.insert(name_of(key.function));
  }
  const double total = doc.value("samples", 0.0);
  // Each stall, with the instructions it is charged at: the loads it waits
  // for (memory dependencies) or its own instruction.
  struct Stall {
    std::string_view kernel;
    std::vector<std::uint64_t> at, reads;
    double samples;
    bool dependency;
  };
  std::vector<Stall> stalls;
  std::map<std::string, double> unattributed;
  std::vector<std::string> changed;
  for (const auto& [kernel_json, f] : doc["functions"].items()) {
    if (!f.is_object() || !f.contains("pcs") || !f["pcs"].is_array()) continue;
    const auto& kernel = kernel_json;
    const auto code = code_.find(kernel);
    const std::string theirs = f.value("code", std::string());
    const bool differs = code != code_.end() && !theirs.empty() && hex(code->second.hash) != theirs;
    if (differs) changed.push_back(kernel);
    const auto ran_it = ran.find(kernel);
    for (const auto& pc : f["pcs"]) {
      if (!pc.is_object() || !pc.contains("reasons") || !pc["reasons"].is_object()) continue;
      auto list = [&](const char* key) {
        std::vector<std::uint64_t> v;
        if (pc.contains(key) && pc[key].is_array())
          for (const auto& w : pc[key])
            if (w.is_number_unsigned()) v.push_back(w.get<std::uint64_t>());
        return v;
      };
      const std::vector<std::uint64_t> waits = list("waits_for"), reads = list("reads");
      const std::uint64_t at = pc.value("pc", std::uint64_t{0});
      for (const auto& [reason, n_json] : pc["reasons"].items()) {
        if (!n_json.is_number()) continue;
        const double n = n_json.get<double>();
        const bool dependency = memory_dependency(reason);
        if (differs)
          unattributed["kernel code differs between the runs"] += n;
        else if (ran_it == ran.end())
          unattributed["kernel made no recorded access in the instrumented run"] += n;
        else if (dependency && waits.empty())
          unattributed["memory dependency with no load found in the SASS"] += n;
        else
          stalls.push_back({*ran_it, dependency ? waits : std::vector{at}, reads, n, dependency});
      }
    }
  }
  // A stall waiting on loads that share a scoreboard waits for the slowest.
  // Which one that is shows in the stalls that wait for one load only: the
  // samples per access they charge each tensor (its rate). A shared wait
  // splits by the mean rate of what each load reads; with no such evidence,
  // over the loads whose registers it reads, else evenly.
  auto accesses_at = [&](std::string_view kernel, std::uint64_t p) {
    const auto it = at_pc.find({kernel, p});
    return it == at_pc.end() ? nullptr : it->second;
  };
  std::map<std::uint32_t, std::pair<double, double>> evidence;  // target -> samples, accesses
  for (const Stall& st : stalls) {
    if (!st.dependency || st.at.size() != 1) continue;
    if (const auto* targets = accesses_at(st.kernel, st.at.front())) {
      std::uint64_t sum = 0;
      for (const auto& [k, c] : *targets) sum += c;
      for (const auto& [k, c] : *targets) {
        evidence[k.target].first += st.samples * c / sum;
        evidence[k.target].second += c;
      }
    }
  }
  auto rate = [&](const std::map<AccessKey, std::uint64_t>& targets) {
    double r = 0, sum = 0;
    for (const auto& [k, c] : targets) {
      sum += c;
      if (const auto e = evidence.find(k.target); e != evidence.end() && e->second.second > 0)
        r += c * e->second.first / e->second.second;
    }
    return sum > 0 ? r / sum : 0.0;
  };
  std::map<std::pair<AccessKey, std::string>, double> blamed;  // (target, op), kernel
  for (const Stall& st : stalls) {
    std::vector<double> weight(st.at.size(), 0.0);
    double weights = 0;
    if (st.at.size() > 1) {
      for (std::size_t i = 0; i < st.at.size(); ++i)
        if (const auto* targets = accesses_at(st.kernel, st.at[i]))
          weights += weight[i] = rate(*targets);
      if (weights == 0)
        for (std::size_t i = 0; i < st.at.size(); ++i)
          weights += weight[i] =
              st.reads.empty() || std::count(st.reads.begin(), st.reads.end(), st.at[i]) ? 1.0
                                                                                         : 0.0;
    } else {
      weight[0] = weights = 1;
    }
    for (std::size_t i = 0; i < st.at.size(); ++i) {
      if (weight[i] == 0) continue;
      const double share = st.samples * weight[i] / weights;
      const auto* targets = accesses_at(st.kernel, st.at[i]);
      if (!targets) {
        unattributed[st.dependency ? "load made no recorded access (e.g. skipped by a filter)"
                                   : "not at a memory instruction (compute, sync, ...)"] += share;
        continue;
      }
      std::uint64_t sum = 0;
      for (const auto& [k, c] : *targets) sum += c;
      for (const auto& [k, c] : *targets) blamed[{k, std::string(st.kernel)}] += share * c / sum;
    }
  }

  std::map<AccessKey, double> per_target_op;
  pasta::detail::BlameNode forest;
  double blamed_total = 0;
  for (const auto& [key, n] : blamed) {
    per_target_op[key.first] += n;
    blamed_total += n;
    const std::uint32_t t = key.first.target;
    const std::uint32_t parent = parent_of(t);
    pasta::detail::BlameNode* node = &forest;
    if (parent != no_target) {
      node = &node->child(target_label(parent));
      node->samples += n;
    }
    node = &node->child(target_label(t));
    node->samples += n;
    const std::string op =
        key.first.op ? pasta::detail::LiveOps::label(key.first.op)
                     : pasta::detail::short_kernel_name(pasta::detail::demangle(key.second));
    node = &node->child(op);
    node->samples += n;
  }
  forest.sort();
  std::vector<std::pair<AccessKey, double>> order(per_target_op.begin(), per_target_op.end());
  std::sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.second > b.second; });
  auto share = [&](double n) { return total > 0 ? n / total : 0.0; };
  auto& table = out.table("blame", "Stall samples blamed on tensors",
                          {"tensor", "operator", "stall_samples", "share"});
  table.precision(2, 1).precision(3, 4);
  for (const auto& [k, n] : order)
    table.row(target_label(k.target), pasta::detail::LiveOps::label(k.op), n, share(n));
  auto& kernels = out.table("blame_kernels", "Stall samples blamed on tensors, per kernel",
                            {"tensor", "operator", "kernel", "stall_samples", "share"});
  kernels.precision(3, 1).precision(4, 4);
  std::vector<std::pair<std::pair<AccessKey, std::string>, double>> rows(blamed.begin(),
                                                                         blamed.end());
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second > b.second; });
  for (const auto& [k, n] : rows)
    kernels.row(target_label(k.first.target), pasta::detail::LiveOps::label(k.first.op),
                pasta::detail::short_kernel_name(pasta::detail::demangle(k.second)), n, share(n));
  auto& rest = out.table("unattributed", "Stall samples not blamed on a tensor",
                         {"why", "stall_samples", "share"});
  rest.precision(1, 1).precision(2, 4);
  for (const auto& [why, n] : unattributed) rest.row(why, n, share(n));
  if (!changed.empty()) {
    auto& t = out.table("code_changed", "Kernels whose machine code differs between the runs",
                        {"kernel"});
    for (const auto& k : changed) t.row(k);
    out.note(fmt::format(
        "{} kernels ran different machine code in the two runs (a JIT, autotuning or a changed "
        "build): their stalls are not blamed",
        changed.size()));
  }
  out.summary("stall samples (sampled run)", total);
  out.summary("blamed on tensors", blamed_total);
  out.summary("blamed share", share(blamed_total));

  const std::string dot = pasta::detail::join_path(output_dir_, "stall_blame.forest.dot");
  const std::string svg = pasta::detail::join_path(output_dir_, "stall_blame.forest.svg");
  std::string why = pasta::detail::make_dirs(output_dir_);
  if (why.empty()) why = pasta::detail::write_file(dot, pasta::detail::forest_dot(forest, total));
  if (why.empty()) why = pasta::detail::write_file(svg, pasta::detail::forest_svg(forest, total));
  if (why.empty()) {
    out.attach(dot);
    out.attach(svg);
  } else {
    out.mark_partial("the blame forest was not written: " + why);
  }
}

}  // namespace pasta::tools
