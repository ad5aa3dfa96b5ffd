// tools::StallBlame's sampled run: its report and stall_samples.json, which
// the instrumented run checks and reads back for the join.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <pasta/core/detail/demangle.hpp>
#include <pasta/core/detail/files.hpp>
#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/report.hpp>
#include <pasta/tools/detail/stall_join.hpp>

namespace pasta::detail::stall {

inline constexpr std::string_view schema = "pasta.stall_samples";
inline constexpr int schema_version = 1;
inline constexpr std::string_view samples_file = "stall_samples.json";

// An instruction of a kernel: (function, pc offset).
struct SampleKey {
  NameId function{};
  std::uint64_t pc = 0;
  friend auto operator<=>(const SampleKey&, const SampleKey&) = default;
};
// The sampled run's samples per instruction and reason.
using Samples = std::map<SampleKey, std::map<NameId, std::uint64_t>>;

// A kernel's machine code, as the module image holds it.
struct KernelCode {
  std::uint64_t hash = 0;
  unsigned arch = 0;
  std::vector<std::byte> bytes;  // empty in the run that joins
};
// The hash as the file holds it, to tell whether the two runs ran the same code.
inline std::string code_hash(std::uint64_t hash) { return fmt::format("{:016x}", hash); }

// Run 1's report, instruction by instruction: the stalls per instruction
// (samples per kernel and pc, then reason), with the loads each
// memory-dependency stall waits for, read from each kernel's code by the
// Disassembler; and the file for run 2.
template <class Disassembler>
class SampledReport {
 public:
  using Instruction = typename Disassembler::Instruction;

  SampledReport(const Disassembler& disassembler, const std::map<std::string, KernelCode>& code_of)
      : tool_(disassembler.locate()), code_of_(code_of) {}

  // One sampled instruction and its samples per reason.
  void add(const SampleKey& key, const std::map<NameId, std::uint64_t>& reasons) {
    const std::string kernel(name_of(key.function));
    auto& f = functions_[kernel];
    const auto code = code_of_.find(kernel);
    if (!f.contains("code")) {
      f["code"] = code == code_of_.end() ? "" : code_hash(code->second.hash);
      f["pcs"] = nlohmann::json::array();
    }
    typename Disassembler::Waits waits;
    std::string opcode;
    if (const auto* instructions = read(kernel, f)) {
      waits = Disassembler::waits_for(*instructions, key.pc);
      if (const auto* i = Disassembler::at(*instructions, key.pc)) opcode = i->opcode;
    }
    nlohmann::json pc{{"pc", key.pc},
                      {"reasons", nlohmann::json::object()},
                      {"waits_for", waits.all},
                      {"reads", waits.reads}};
    if (!opcode.empty()) pc["opcode"] = opcode;
    std::string list;
    for (std::uint64_t w : waits.all) list += fmt::format("{}0x{:x}", list.empty() ? "" : " ", w);
    for (const auto& [r, n] : reasons) {
      pc["reasons"][std::string(name_of(r))] = n;
      by_reason_[r] += n;
      if (memory_dependency(name_of(r))) (waits.all.empty() ? unmoved_ : moved_) += n;
      rows_.push_back({kernel, opcode, std::string(name_of(r)), list, key.pc, n});
    }
    f["pcs"].push_back(std::move(pc));
  }

  // The tables, the summary, and stall_samples.json in `output_dir`.
  void write(Report& out, std::uint64_t total, const std::string& output_dir) {
    auto& top = out.table("stalls", "Stall samples per instruction",
                          {"kernel", "pc", "opcode", "reason", "samples", "waits_for"});
    std::sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) {
      return a.samples != b.samples ? a.samples > b.samples : a.pc < b.pc;
    });
    for (const Row& r : rows_)
      top.row(short_kernel_name(demangle(r.kernel)), fmt::format("0x{:x}", r.pc), r.opcode,
              r.reason, r.samples, r.waits);
    auto& reasons =
        out.table("reasons", "Stall samples per reason", {"reason", "samples", "share"});
    std::vector<std::pair<NameId, std::uint64_t>> order(by_reason_.begin(), by_reason_.end());
    std::sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.second > b.second; });
    for (const auto& [r, n] : order)
      reasons.row(std::string(name_of(r)), n, total ? double(n) / total : 0.0);
    out.summary("stall samples", total);
    out.summary("memory-dependency samples moved to their load", moved_);
    if (unmoved_)
      out.note(fmt::format(
          "{} memory-dependency samples stay at the stalled instruction: {}", unmoved_,
          tool_.empty() ? Disassembler::not_found
                        : "no load feeding them was found in the SASS, or the kernel's code was "
                          "not seen loading"));
    for (const auto& p : problems_) out.note(p);
    write_file_for_run_2(out, total, output_dir);
  }

 private:
  struct Row {
    std::string kernel, opcode, reason, waits;
    std::uint64_t pc, samples;
  };

  // Every sampled kernel is read once: its memory-dependency stalls move to
  // their loads, and its loads no access patch sees are named for run 2
  // (in its entry `f`). Nothing when its code or the disassembler is missing.
  const std::vector<Instruction>* read(const std::string& kernel, nlohmann::json& f) {
    const auto code = code_of_.find(kernel);
    if (code == code_of_.end() || code->second.bytes.empty() || tool_.empty()) return nullptr;
    auto [it, fresh] = disassembled_.try_emplace(kernel);
    if (fresh) {
      std::string why;
      it->second = Disassembler::disassemble(code->second.bytes, code->second.arch, tool_, why);
      if (!why.empty()) problems_.push_back(fmt::format("{}: {}", kernel, why));
      // Loads the access run will not see: run 2 names these kernels.
      if constexpr (requires { Disassembler::unseen_loads(it->second); })
        if (const std::size_t n = Disassembler::unseen_loads(it->second)) f["unseen_loads"] = n;
    }
    return &it->second;
  }

  void write_file_for_run_2(Report& out, std::uint64_t total, const std::string& output_dir) {
    nlohmann::json doc{{"schema", schema},
                       {"version", schema_version},
                       {"samples", total},
                       {"nvdisasm", tool_},
                       {"functions", std::move(functions_)}};
    const std::string path = join_path(output_dir, samples_file);
    std::string why = make_dirs(output_dir);
    if (why.empty()) why = write_file(path, doc.dump(1));
    if (why.empty())
      out.attach(path);
    else
      out.mark_partial(fmt::format("{} not written: {}", samples_file, why));
  }

  const std::string tool_;
  const std::map<std::string, KernelCode>& code_of_;
  std::map<NameId, std::uint64_t> by_reason_;
  std::map<std::string, std::vector<Instruction>> disassembled_;
  std::vector<std::string> problems_;
  nlohmann::json functions_ = nlohmann::json::object();
  std::uint64_t moved_ = 0, unmoved_ = 0;
  std::vector<Row> rows_;
};

template <class Disassembler>
void report_sampled(Report& out, const Disassembler& disassembler, const Samples& samples,
                    const std::map<std::string, KernelCode>& code_of, std::uint64_t total,
                    const std::string& output_dir) {
  SampledReport<Disassembler> report(disassembler, code_of);
  for (const auto& [key, reasons] : samples) report.add(key, reasons);
  report.write(out, total, output_dir);
}

// Why the file at `path`, whose text is `text` (empty: unreadable) and
// `doc` that text parsed, cannot be joined; empty when it can.
inline std::string unreadable(const std::string& path, const std::string& text,
                              const nlohmann::json& doc) {
  if (text.empty() || doc.is_discarded() || !doc.is_object() ||
      doc.value("schema", std::string()) != schema || !doc.contains("functions") ||
      !doc["functions"].is_object())
    return fmt::format(
        "PASTA_STALL_SAMPLES={}: {}", path,
        text.empty() ? "cannot be read" : "not a stall_samples.json (schema pasta.stall_samples)");
  if (doc.value("version", 0) > schema_version)
    return fmt::format("{}: version {} is newer than this pasta reads ({})", path,
                       doc.value("version", 0), schema_version);
  return {};
}

// The file's "functions", as the join takes them: entries that are not
// what the sampled run writes are left out.
inline std::vector<SampledKernel> sampled_kernels(const nlohmann::json& functions) {
  std::vector<SampledKernel> out;
  for (const auto& [kernel, f] : functions.items()) {
    if (!f.is_object() || !f.contains("pcs") || !f["pcs"].is_array()) continue;
    SampledKernel& k = out.emplace_back();
    k.name = kernel;
    k.code = f.value("code", std::string());
    if (const auto u = f.find("unseen_loads"); u != f.end() && u->is_number_unsigned())
      k.unseen_loads = u->get<std::uint64_t>();
    for (const auto& pc : f["pcs"]) {
      if (!pc.is_object() || !pc.contains("reasons") || !pc["reasons"].is_object()) continue;
      auto list = [&](const char* key) {
        std::vector<std::uint64_t> v;
        if (pc.contains(key) && pc[key].is_array())
          for (const auto& w : pc[key])
            if (w.is_number_unsigned()) v.push_back(w.get<std::uint64_t>());
        return v;
      };
      SampledPc& p = k.pcs.emplace_back();
      p.pc = pc.value("pc", std::uint64_t{0});
      p.waits_for = list("waits_for");
      p.reads = list("reads");
      for (const auto& [reason, n] : pc["reasons"].items())
        if (n.is_number()) p.reasons.emplace_back(reason, n.get<double>());
    }
  }
  return out;
}

}  // namespace pasta::detail::stall
