// tools::StallBlame's stall_samples.json, which the sampled run writes:
// checked and read back for the join in the instrumented run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/tools/detail/stall_join.hpp>

namespace pasta::detail::stall {

inline constexpr std::string_view schema = "pasta.stall_samples";
inline constexpr int schema_version = 1;
inline constexpr std::string_view samples_file = "stall_samples.json";

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
