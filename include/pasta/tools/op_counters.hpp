// Hardware counters per kernel and per operator: DRAM bytes and throughput,
// SM throughput, L1/L2 hit rates, occupancy, tensor-core activity,
// instructions, FLOPs and arithmetic intensity, under ncu's metric names
// (core/metrics.hpp). Answers "why is this operator slow".
//
// Launches with the same signature (kernel, grid, block, operator path) run
// the same code on the same shapes, so a profiling handler measures the
// first few of each and this tool gives the others the mean of the measured
// ones, counting them as propagated: twelve identical transformer blocks
// cost one block of replay. A measurement may hold some metrics only (NaN
// for the others: the handler measures the cache-sensitive ones again in a
// pass of their own); each metric comes from the measurements of its
// signature that took the fewest replay passes, the least disturbed ones.
// Besides the report tables it writes the
// per-operator profile, <output_dir>/op_counters.profile.json, in the
// versioned schema of docs/op-profile.md.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/api.hpp>
#include <pasta/core/detail/demangle.hpp>
#include <pasta/core/detail/files.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/metrics.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/report.hpp>
#include <pasta/tools/detail/op_table.hpp>
#include <pasta/tools/detail/roofline.hpp>

namespace pasta::detail {
// A row of OpCounters' verdict tables: an operator, or a kernel signature and
// its operator ("kernel\toperator"), judged against the GPU's ceilings.
struct VerdictRow {
  std::string what;
  RooflineInput in;
  Verdict v;
};
}  // namespace pasta::detail

namespace pasta::tools {

class OpCounters {
 public:
  static constexpr std::string_view name = "op_counters";
  static constexpr std::string_view schema = "pasta.op_profile";
  static constexpr std::string_view schema_version = "1.1";
  static constexpr std::size_t max_depth = 1024;  // against parent loops in damaged traces

  explicit OpCounters(const Config& cfg)
      : path_(detail::join_path(cfg.output_dir, "op_counters.profile.json")),
        ceilings_override_(cfg.ceilings) {}

  // The GPU's name picks its ceilings for the verdicts (detail/roofline.hpp).
  void on(const DeviceInfo& e) {
    if (device_name_.empty()) device_name_ = std::string(name_of(e.name));
  }
  // Operators are looked up when their kernels complete, after they ended.
  void on(const OpBegin& e) { ops_.put({e.id, e.parent, e.name}); }
  void on(const KernelComplete& e);
  void on(const KernelCounters& e) {
    counters_[e.correlation] = e;
    cupti_replay_ = cupti_replay_ || e.l2_warm_replay;
  }

  // Per signature: launches, device time, and the measured launches' counters.
  struct Group {
    struct Signature {
      NameId kernel;
      Dim3 grid, block;
      NameId path;  // operator names, outermost first, '/'-joined; empty id: no operator
      auto operator<=>(const Signature&) const = default;
    } sig;
    std::uint64_t launches = 0, device_ns = 0;
    std::uint64_t measured = 0;  // launches with counters
    // Their launch indices: places among all the kernel launches this tool
    // saw, 0-based, in launch order (the order of their correlation ids),
    // which is what `ncu --launch-skip` counts in a deterministic program.
    std::vector<std::uint64_t> measured_launches{};
    // Per metric (metrics::all's order), from the measurements with the
    // fewest passes: additive values summed, rates weighted by device time.
    struct Value {
      double sum = 0;
      std::uint64_t n = 0, weight_ns = 0;
      std::uint32_t passes = 0;
    };
    std::array<Value, metrics::all.size()> values{};
  };
  using Signature = Group::Signature;

  // The groups with the counters of their measured launches joined; what
  // report() prints, for tests and other tools.
  std::vector<Group> groups() const;
  // Metric m (an index into metrics::all) of all launches of a group:
  // additive ones are the measured mean times the launches, rates the
  // measured time-weighted mean; NaN if no launch measured it.
  static double total(const Group& g, std::size_t m);

  void report(Report& out) const;

 private:
  struct Op {
    std::uint64_t id = 0, parent = 0;
    NameId name{};
  };
  struct Launch {
    std::uint64_t correlation;
    std::size_t group;
    std::uint64_t device_ns;
  };
  struct SignatureHash {
    std::size_t operator()(const Signature& s) const {
      std::size_t h = s.kernel.value;
      for (std::uint64_t v :
           {std::uint64_t{s.grid.x}, std::uint64_t{s.grid.y}, std::uint64_t{s.grid.z},
            std::uint64_t{s.block.x}, std::uint64_t{s.block.y}, std::uint64_t{s.block.z},
            std::uint64_t{s.path.value}})
        h = h * 1000003u ^ v;
      return h;
    }
  };

  NameId op_path(std::uint64_t op);

  // One operator's counters: its groups', additive metrics summed, rates
  // weighted by the device time of the groups that have them.
  struct OpRow {
    std::uint64_t launches = 0, measured = 0, propagated = 0, unmeasured = 0, device_ns = 0;
    std::vector<double> values = std::vector<double>(metrics::all.size());
    std::vector<std::uint64_t> rated_ns = std::vector<std::uint64_t>(metrics::all.size());
    std::vector<bool> have = std::vector<bool>(metrics::all.size());
    std::vector<std::size_t> groups;
  };
  static std::map<std::string, OpRow> by_operator(const std::vector<Group>& gs);

  // report()'s parts, in the order it writes them. summarize() returns the
  // warnings it noted, which the profile document repeats.
  std::vector<std::string> summarize(Report& out, const std::vector<Group>& gs) const;
  static void operator_table(Report& out, const std::map<std::string, OpRow>& ops);
  void verdicts(Report& out, const std::vector<Group>& gs,
                const std::map<std::string, OpRow>& ops) const;
  std::string profile(const std::vector<Group>& gs, const std::map<std::string, OpRow>& ops,
                      const std::vector<std::string>& warnings) const;
  void write_profile(Report& out, const std::string& doc) const;

  using VerdictRow = detail::VerdictRow;
  // The rows of the two verdict tables, each ranked by the time it would save.
  using VerdictRows = std::vector<VerdictRow>;
  std::pair<VerdictRows, VerdictRows> verdict_rows(const std::vector<Group>& gs,
                                                   const std::map<std::string, OpRow>& ops,
                                                   const detail::Ceilings& c) const;
  static void verdict_table(Report& out, const char* name, const char* title, bool kernels,
                            const VerdictRows& rows, const detail::Ceilings& c,
                            std::uint64_t device_ns);

  std::string path_;
  // Counters from CUPTI's kernel replay (PASTA_COUNTER_REPLAY=cupti;
  // KernelCounters::l2_warm_replay): a replayed value of a cache-sensitive
  // metric saw L2 holding the restored memory.
  bool cupti_replay_ = false;
  detail::OpTable<Op> ops_;
  std::unordered_map<std::uint64_t, NameId> paths_;
  std::unordered_map<Signature, std::size_t, SignatureHash> index_;
  std::vector<Group> groups_;
  std::vector<Launch> launches_;
  std::unordered_map<std::uint64_t, KernelCounters> counters_;
  std::uint64_t evicted_ = 0;
  std::string ceilings_override_;  // Config::ceilings
  std::string device_name_;        // the first DeviceInfo's
};

}  // namespace pasta::tools

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/tools/detail/op_counters_impl.hpp>
#endif
