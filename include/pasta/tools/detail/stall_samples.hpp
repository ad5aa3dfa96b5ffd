// tools::StallBlame's stall_samples.json, which the sampled run writes:
// read back for the join in the instrumented run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <pasta/tools/detail/stall_join.hpp>

namespace pasta::detail::stall {

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
