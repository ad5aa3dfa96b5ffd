// tools::StallBlame's join: the sampled run's stall samples per instruction
// charged to what the instrumented run's accesses at those instructions
// touched. Pure functions of their arguments.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <pasta/core/names.hpp>

namespace pasta::detail::stall {

// What an access touched when it is no allocation, tensor or view.
inline constexpr std::uint32_t no_target = ~0u;

// Samples of a reason ending in "_not_issued" are a subset of the same reason's.
inline bool not_issued(std::string_view reason) { return reason.ends_with("_not_issued"); }
// A stall waiting for a load's result (a long scoreboard).
inline bool memory_dependency(std::string_view reason) {
  return reason.find("long_scoreboard") != std::string_view::npos;
}

// What one instruction touched in the instrumented run: its accesses per
// target (the tool's index of an allocation, tensor or view, or no_target)
// and the operator that launched the kernel.
struct AccessKey {
  std::uint32_t target;
  NameId op;
  friend auto operator<=>(const AccessKey&, const AccessKey&) = default;
};
using Accesses = std::map<AccessKey, std::uint64_t>;
// (kernel name, pc offset) -> what that instruction touched.
using AccessesAt = std::map<std::pair<std::string_view, std::uint64_t>, const Accesses*>;

// The sampled run's stalls at one instruction of a kernel.
struct SampledPc {
  std::uint64_t pc = 0;
  std::vector<std::pair<std::string, double>> reasons;  // samples per stall reason
  std::vector<std::uint64_t> waits_for;                 // the loads a memory dependency waits for
  std::vector<std::uint64_t> reads;                     // those of them whose registers it reads
};
struct SampledKernel {
  std::string name;
  std::string code;  // the hash of its machine code; empty when unknown
  std::vector<SampledPc> pcs;
  std::uint64_t unseen_loads = 0;  // loads in its code that no access patch sees
};

struct Blame {
  // Samples charged to a (target, operator), per kernel.
  std::map<std::pair<AccessKey, std::string>, double> blamed;
  std::map<std::string, double> unattributed;  // samples per reason none was charged
  std::vector<std::string> changed;            // kernels whose machine code differs
};

// One sampled stall, with the instructions it is charged at (the loads a
// memory dependency waits for, else its own) and the loads whose registers
// it reads.
struct Stall {
  std::string_view kernel;
  std::vector<std::uint64_t> at, reads;
  double samples;
  bool dependency;
};
// Samples per access each target was charged by stalls that wait for one
// load only: target -> (samples, accesses).
using Evidence = std::map<std::uint32_t, std::pair<double, double>>;

inline const Accesses* accesses_at(const AccessesAt& accesses, std::string_view kernel,
                                   std::uint64_t pc) {
  const auto it = accesses.find({kernel, pc});
  return it == accesses.end() ? nullptr : it->second;
}

// The sampled stalls that can be charged; the others go to `out` as
// unattributed, by why (or its `changed` kernels).
inline std::vector<Stall> chargeable(const std::vector<SampledKernel>& sampled,
                                     const AccessesAt& accesses,
                                     const std::map<std::string, std::string, std::less<>>& code,
                                     Blame& out) {
  std::set<std::string_view> ran;
  for (const auto& [at, targets] : accesses) ran.insert(at.first);
  std::vector<Stall> stalls;
  for (const SampledKernel& k : sampled) {
    const auto here = code.find(k.name);
    const bool differs = here != code.end() && !k.code.empty() && here->second != k.code;
    if (differs) out.changed.push_back(k.name);
    const auto ran_it = ran.find(k.name);
    for (const SampledPc& pc : k.pcs)
      for (const auto& [reason, n] : pc.reasons) {
        const bool dependency = memory_dependency(reason);
        if (differs)
          out.unattributed["kernel code differs between the runs"] += n;
        else if (ran_it == ran.end())
          out.unattributed["kernel made no recorded access in the instrumented run"] += n;
        else if (dependency && pc.waits_for.empty())
          out.unattributed["memory dependency with no load found in the SASS"] += n;
        else
          stalls.push_back(
              {*ran_it, dependency ? pc.waits_for : std::vector{pc.pc}, pc.reads, n, dependency});
      }
  }
  return stalls;
}

inline Evidence single_load_evidence(const std::vector<Stall>& stalls, const AccessesAt& accesses) {
  Evidence evidence;
  for (const Stall& st : stalls) {
    if (!st.dependency || st.at.size() != 1) continue;
    if (const auto* targets = accesses_at(accesses, st.kernel, st.at.front())) {
      std::uint64_t sum = 0;
      for (const auto& [k, c] : *targets) sum += c;
      for (const auto& [k, c] : *targets) {
        evidence[k.target].first += st.samples * c / sum;
        evidence[k.target].second += c;
      }
    }
  }
  return evidence;
}

// How much of a stall each of its instructions takes, as weights: one takes
// it all; a shared wait splits by the mean rate of what each load reads (the
// evidence), else over the loads whose registers it reads, else evenly.
inline std::vector<double> weights(const Stall& st, const AccessesAt& accesses,
                                   const Evidence& evidence) {
  if (st.at.size() == 1) return {1.0};
  auto rate = [&](const Accesses& targets) {
    double r = 0, sum = 0;
    for (const auto& [k, c] : targets) {
      sum += c;
      if (const auto e = evidence.find(k.target); e != evidence.end() && e->second.second > 0)
        r += c * e->second.first / e->second.second;
    }
    return sum > 0 ? r / sum : 0.0;
  };
  std::vector<double> weight(st.at.size(), 0.0);
  bool any = false;
  for (std::size_t i = 0; i < st.at.size(); ++i)
    if (const auto* targets = accesses_at(accesses, st.kernel, st.at[i]))
      any = (weight[i] = rate(*targets)) != 0 || any;
  if (!any)
    for (std::size_t i = 0; i < st.at.size(); ++i)
      weight[i] =
          st.reads.empty() || std::count(st.reads.begin(), st.reads.end(), st.at[i]) ? 1.0 : 0.0;
  return weight;
}

// Each stall is charged at the loads it waits for (a memory dependency) or
// at its own instruction (any other reason), and from there to the targets
// that instruction accessed, in proportion to their accesses. `code` is each
// kernel's machine-code hash in the instrumented run: a kernel whose hash
// differs from the sampled run's is left out.
//
// A stall waiting on loads that share a scoreboard waits for the slowest.
// Which one that is shows in the stalls that wait for one load only: the
// samples per access they charge each target (its rate). A shared wait
// splits by the mean rate of what each load reads; with no such evidence,
// over the loads whose registers it reads, else evenly.
inline Blame join(const std::vector<SampledKernel>& sampled, const AccessesAt& accesses,
                  const std::map<std::string, std::string, std::less<>>& code) {
  Blame out;
  const std::vector<Stall> stalls = chargeable(sampled, accesses, code, out);
  const Evidence evidence = single_load_evidence(stalls, accesses);
  for (const Stall& st : stalls) {
    const std::vector<double> weight = weights(st, accesses, evidence);
    double total = 0;
    for (double w : weight) total += w;
    for (std::size_t i = 0; i < st.at.size(); ++i) {
      if (weight[i] == 0) continue;
      const double share = st.samples * weight[i] / total;
      const auto* targets = accesses_at(accesses, st.kernel, st.at[i]);
      if (!targets) {
        out.unattributed[st.dependency ? "load made no recorded access (e.g. skipped by a filter)"
                                       : "not at a memory instruction (compute, sync, ...)"] +=
            share;
        continue;
      }
      std::uint64_t sum = 0;
      for (const auto& [k, c] : *targets) sum += c;
      for (const auto& [k, c] : *targets)
        out.blamed[{k, std::string(st.kernel)}] += share * c / sum;
    }
  }
  return out;
}

}  // namespace pasta::detail::stall
