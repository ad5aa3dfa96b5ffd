// OpCounters's event handlers and report (the per-operator profile as JSON): inline in header-only
// builds; in a compiled build (core/detail/api.hpp) compiled once, in the
// runtime, so a unit that includes the header parses none of it.
#pragma once

#include <nlohmann/json.hpp>

#include <pasta/tools/op_counters.hpp>

namespace pasta::detail {

// Metric values of a whole group (metrics::all's order).
inline std::vector<double> group_values(const tools::OpCounters::Group& g) {
  std::vector<double> v;
  for (std::size_t m = 0; m < metrics::all.size(); ++m) v.push_back(tools::OpCounters::total(g, m));
  return v;
}
inline double intensity_of(const std::vector<double>& v) {
  KernelCounters c{};
  for (std::size_t m = 0; m < metrics::all.size(); ++m) c.*metrics::all[m].field = v[m];
  return metrics::arithmetic_intensity(c);
}
// Not measured: an empty cell, null in JSON.
inline Cell measured_cell(double v) {
  return metrics::measured(v) ? Cell(v) : Cell(std::monostate{});
}
inline nlohmann::json measured_json(double v) {
  return metrics::measured(v) ? nlohmann::json(v) : nullptr;
}
// Each metric's value by its key, and the arithmetic intensity.
inline nlohmann::json metrics_json(const std::vector<double>& v) {
  nlohmann::json ms = nlohmann::json::object();
  for (std::size_t m = 0; m < metrics::all.size(); ++m)
    ms[std::string(metrics::all[m].key)] = measured_json(v[m]);
  ms["arithmetic_intensity"] = measured_json(intensity_of(v));
  return ms;
}
// What the roofline reads of a set of metric values (metrics::all's order).
inline RooflineInput roofline_input(const std::vector<double>& v, std::uint64_t device_ns,
                                    std::uint64_t launches) {
  auto get = [&](double KernelCounters::*field) {
    for (std::size_t m = 0; m < metrics::all.size(); ++m)
      if (metrics::all[m].field == field) return metrics::measured(v[m]) ? v[m] : 0.0;
    return 0.0;
  };
  return RooflineInput{
      .device_ns = static_cast<double>(device_ns),
      .launches = static_cast<double>(launches),
      .dram_bytes = get(&KernelCounters::dram_bytes_read) + get(&KernelCounters::dram_bytes_write),
      .fp_flops = get(&KernelCounters::flops),
      .dram_pct = get(&KernelCounters::dram_throughput_pct),
      .sm_pct = get(&KernelCounters::sm_throughput_pct),
      .tensor_pct = get(&KernelCounters::tensor_active_pct)};
}
// A verdict table's columns after its rank, kernel and operator: the name,
// the digits a double shows, and the cell of a row. `known`: the GPU's
// ceilings are known (else what they give is empty); `device_ns`: the
// run's device time, which saving_pct is a share of.
struct VerdictColumn {
  const char* name;
  int digits;
  Cell (*cell)(const VerdictRow& r, bool known, double device_ns);
};
inline constexpr VerdictColumn verdict_columns[] = {
    {"device_ms", 3, [](const auto& r, bool, double) { return Cell(r.in.device_ns * 1e-6); }},
    {"bound", 3,
     [](const auto& r, bool, double) { return Cell(std::string(to_string(r.v.bound))); }},
    {"dram_throughput_pct", 1, [](const auto& r, bool, double) { return Cell(r.in.dram_pct); }},
    {"sm_throughput_pct", 1, [](const auto& r, bool, double) { return Cell(r.in.sm_pct); }},
    {"tensor_active_pct", 1, [](const auto& r, bool, double) { return Cell(r.in.tensor_pct); }},
    {"arithmetic_intensity", 3, [](const auto& r, bool, double) { return Cell(r.v.intensity); }},
    {"achieved_tflops", 3,
     [](const auto& r, bool, double) { return Cell(r.v.flops_per_s * 1e-12); }},
    {"attainable_ms", 3,
     [](const auto& r, bool known, double) {
       return known ? Cell(r.v.attainable_ns * 1e-6) : Cell{};
     }},
    {"saving_ms", 3,
     [](const auto& r, bool known, double) { return known ? Cell(r.v.saving_ns * 1e-6) : Cell{}; }},
    {"saving_pct", 1,
     [](const auto& r, bool known, double device_ns) {
       return known && device_ns > 0 ? Cell(100.0 * r.v.saving_ns / device_ns) : Cell{};
     }},
};
}  // namespace pasta::detail

namespace pasta::tools {

PASTA_FUNC void OpCounters::report(Report& out) const {
  out.page(20)
      .nothing("no hardware counters measured: run with --counters", "measured")
      .tables({"verdicts", "operators", "kernel_verdicts"});
  const std::vector<Group> gs = groups();
  const std::vector<std::string> warnings = summarize(out, gs);
  const std::map<std::string, OpRow> ops = by_operator(gs);
  operator_table(out, ops);
  verdicts(out, gs, ops);
  write_profile(out, profile(gs, ops, warnings));
}

PASTA_FUNC std::vector<std::string> OpCounters::summarize(Report& out,
                                                          const std::vector<Group>& gs) const {
  std::uint64_t launches = 0, measured = 0, unmeasured = 0;
  for (const Group& g : gs) {
    launches += g.launches;
    measured += g.measured;
    if (!g.measured) unmeasured += g.launches;
  }
  const std::uint64_t propagated = launches - measured - unmeasured;
  const std::uint64_t stray =
      counters_.size() - std::min<std::uint64_t>(measured, counters_.size());
  out.summary("kernel launches", launches);
  out.summary("measured", measured);
  out.summary("propagated from a measured launch of the same signature", propagated);
  out.summary("without counters", unmeasured);
  out.summary("signatures", gs.size());
  if (stray) out.summary("counter records of no completed launch", stray);
  std::vector<std::string> warnings;
  if (unmeasured)
    warnings.push_back(std::to_string(unmeasured) +
                       " launches have no counters: no launch of their signature was measured");
  // dram_bytes_write stands for the cache-sensitive metrics: under CUPTI's
  // kernel replay, measured in one pass, or only under replay (a signature
  // launched once, or whose later launches were not measured:
  // nv/counters/counter_plan.hpp). pasta's own replay flushes L2 before every pass.
  constexpr std::size_t dram_write = 1;
  static_assert(metrics::all[dram_write].field == &KernelCounters::dram_bytes_write);
  std::uint64_t replayed = 0;
  if (cupti_replay_)
    for (const Group& g : gs) replayed += g.values[dram_write].n && g.values[dram_write].passes > 1;
  if (replayed)
    warnings.push_back(std::to_string(replayed) +
                       " signatures have DRAM bytes and hit rates measured under kernel replay "
                       "only (no later launch measured in one pass): the memory the profiler "
                       "saved and restored between passes was in L2 with them");
  if (stray)
    warnings.push_back(std::to_string(stray) +
                       " counter records name a launch whose completion was never seen");
  if (evicted_)
    warnings.push_back(std::to_string(evicted_) +
                       " launches name an operator that left the operator table; they are listed "
                       "as unattributed");
  for (const auto& w : warnings) out.note(w);
  return warnings;
}

PASTA_FUNC void OpCounters::operator_table(Report& out, const std::map<std::string, OpRow>& ops) {
  std::vector<std::string> columns{"operator", "launches", "measured", "propagated", "device_ms"};
  for (const auto& m : metrics::all) columns.emplace_back(m.key);
  columns.emplace_back("arithmetic_intensity");
  auto& t = out.table("operators", "Counters per operator (ncu metric names in the JSON)", columns);
  for (const auto& [path, r] : ops) {
    std::vector<Cell> row{path.empty() ? "(outside every operator)" : path, r.launches, r.measured,
                          r.propagated, r.device_ns * 1e-6};
    for (double v : r.values) row.push_back(detail::measured_cell(v));
    row.push_back(detail::measured_cell(detail::intensity_of(r.values)));
    t.row(std::move(row));
  }
}

// The profile document: operators -> kernels -> metrics (docs/op-profile.md).
PASTA_FUNC std::string OpCounters::profile(const std::vector<Group>& gs,
                                           const std::map<std::string, OpRow>& ops,
                                           const std::vector<std::string>& warnings) const {
  nlohmann::json metric_names = nlohmann::json::object();
  for (const auto& m : metrics::all)
    metric_names[std::string(m.key)] = {{"ncu", m.ncu}, {"unit", m.unit}};
  auto kernel_json = [](const Group& g) {
    return nlohmann::json{
        {"kernel", std::string(name_of(g.sig.kernel))},
        {"grid", {g.sig.grid.x, g.sig.grid.y, g.sig.grid.z}},
        {"block", {g.sig.block.x, g.sig.block.y, g.sig.block.z}},
        {"launches", g.launches},
        {"measured", g.measured},
        {"measured_launches", g.measured_launches},
        {"propagated", g.measured ? g.launches - g.measured : 0},
        {"device_ns", g.device_ns},
        {"metrics", g.measured ? detail::metrics_json(detail::group_values(g)) : nullptr}};
  };
  nlohmann::json doc{{"schema", schema},
                     {"version", schema_version},
                     {"metrics", metric_names},
                     {"operators", nlohmann::json::array()},
                     {"unattributed", nlohmann::json::array()},
                     {"warnings", warnings}};
  for (const auto& [path, r] : ops) {
    nlohmann::json kernels = nlohmann::json::array();
    for (std::size_t i : r.groups) kernels.push_back(kernel_json(gs[i]));
    if (path.empty()) {
      doc["unattributed"] = std::move(kernels);
      continue;
    }
    doc["operators"].push_back(
        {{"path", path},
         {"operator", path.substr(path.rfind('/') + 1)},
         {"launches", r.launches},
         {"measured", r.measured},
         {"propagated", r.propagated},
         {"device_ns", r.device_ns},
         {"metrics", r.measured ? detail::metrics_json(r.values) : nlohmann::json(nullptr)},
         {"kernels", std::move(kernels)}});
  }
  return doc.dump(2) + "\n";
}

PASTA_FUNC void OpCounters::write_profile(Report& out, const std::string& doc) const {
  if (const auto why = detail::make_dirs(detail::parent_dir(path_)); !why.empty()) {
    out.summary("error", why);
  } else if (const auto why2 = detail::write_file(path_, doc); !why2.empty()) {
    out.summary("error", why2);
  } else {
    out.summary("profile", path_);
    out.attach(path_);
  }
}

PASTA_FUNC auto OpCounters::by_operator(const std::vector<Group>& gs)
    -> std::map<std::string, OpRow> {
  std::map<std::string, OpRow> ops;  // by path, "" for kernels outside every operator
  for (std::size_t i = 0; i < gs.size(); ++i) {
    const Group& g = gs[i];
    OpRow& r = ops[g.sig.path.value ? std::string(name_of(g.sig.path)) : std::string()];
    r.groups.push_back(i);
    r.launches += g.launches;
    r.device_ns += g.device_ns;
    r.measured += g.measured;
    (g.measured ? r.propagated : r.unmeasured) += g.launches - g.measured;
    for (std::size_t m = 0; m < metrics::all.size(); ++m) {
      const double v = total(g, m);
      if (!metrics::measured(v)) continue;
      r.have[m] = true;
      r.values[m] += metrics::all[m].additive ? v : v * static_cast<double>(g.device_ns);
      r.rated_ns[m] += g.device_ns;
    }
  }
  for (auto& [path, r] : ops)
    for (std::size_t m = 0; m < metrics::all.size(); ++m) {
      if (!r.have[m])
        r.values[m] = metrics::not_measured;
      else if (!metrics::all[m].additive)
        r.values[m] = r.rated_ns[m] ? r.values[m] / static_cast<double>(r.rated_ns[m]) : 0;
    }
  return ops;
}

// What bounds each operator and each kernel signature, and the time each would
// take at the GPU's ceilings: the "fix first" list, ranked by what that saves.
PASTA_FUNC void OpCounters::verdicts(Report& out, const std::vector<Group>& gs,
                                     const std::map<std::string, OpRow>& ops) const {
  const detail::Ceilings c = detail::ceilings_for(device_name_, ceilings_override_);
  out.summary("device", device_name_.empty() ? std::string("unknown") : device_name_);
  out.summary("ceilings", c.source);
  if (c.known()) {
    out.summary("ceiling: DRAM (TB/s)", c.dram_bytes_per_s * 1e-12);
    out.summary("ceiling: FP32 (TFLOP/s)", c.fp32_flops_per_s * 1e-12);
    out.summary("ceiling: tensor (TFLOP/s)", c.tensor_flops_per_s * 1e-12);
  }
  std::uint64_t device_ns = 0;
  for (const Group& g : gs) device_ns += g.device_ns;
  const auto [by_op, by_kernel] = verdict_rows(gs, ops, c);
  verdict_table(out, "verdicts",
                "Fix first: operators by the device time they would save at the GPU's ceilings",
                false, by_op, c, device_ns);
  verdict_table(out, "kernel_verdicts", "What bounds each kernel (by signature and operator)", true,
                by_kernel, c, device_ns);
}

PASTA_FUNC auto OpCounters::verdict_rows(const std::vector<Group>& gs,
                                         const std::map<std::string, OpRow>& ops,
                                         const detail::Ceilings& c) const
    -> std::pair<VerdictRows, VerdictRows> {
  auto add = [&](VerdictRows& rows, std::string what, const detail::RooflineInput& in) {
    rows.push_back({std::move(what), in, detail::judge(in, c)});
  };
  std::pair<VerdictRows, VerdictRows> out;
  for (const auto& [path, r] : ops)
    if (r.measured)
      add(out.first, path.empty() ? "(outside every operator)" : path,
          detail::roofline_input(r.values, r.device_ns, r.launches));
  for (const Group& g : gs)
    if (g.measured)
      add(out.second,
          std::string(name_of(g.sig.kernel)) + "\t" +
              (g.sig.path.value ? std::string(name_of(g.sig.path)) : std::string()),
          detail::roofline_input(detail::group_values(g), g.device_ns, g.launches));
  for (VerdictRows* rows : {&out.first, &out.second})
    std::stable_sort(rows->begin(), rows->end(), [](const VerdictRow& a, const VerdictRow& b) {
      if (a.v.saving_ns != b.v.saving_ns) return a.v.saving_ns > b.v.saving_ns;
      return a.in.device_ns > b.in.device_ns;
    });
  return out;
}

PASTA_FUNC void OpCounters::verdict_table(Report& out, const char* name, const char* title,
                                          bool kernels, const VerdictRows& rows,
                                          const detail::Ceilings& c, std::uint64_t device_ns) {
  std::vector<std::string> columns{"rank"};
  if (kernels) columns.emplace_back("kernel");
  columns.emplace_back("operator");
  const std::size_t first = columns.size();
  for (const auto& col : detail::verdict_columns) columns.emplace_back(col.name);
  auto& t = out.table(name, title, columns);
  for (std::size_t i = 0; i < std::size(detail::verdict_columns); ++i)
    t.precision(first + i, detail::verdict_columns[i].digits);
  std::uint64_t rank = 0;
  for (const VerdictRow& r : rows) {
    std::vector<Cell> cells{++rank};
    const auto tab = r.what.find('\t');
    if (kernels) cells.emplace_back(r.what.substr(0, tab));
    cells.emplace_back(kernels ? r.what.substr(tab + 1) : r.what);
    for (const auto& col : detail::verdict_columns)
      cells.push_back(col.cell(r, c.known(), static_cast<double>(device_ns)));
    t.row(std::move(cells));
  }
}

PASTA_FUNC void OpCounters::on(const KernelComplete& e) {
  const Signature sig{e.name, e.grid, e.block, op_path(e.op)};
  auto [it, fresh] = index_.try_emplace(sig, groups_.size());
  if (fresh) groups_.push_back({sig});
  Group& g = groups_[it->second];
  const std::uint64_t d = duration_ns(e.start_ns, e.end_ns);
  ++g.launches;
  g.device_ns += d;
  launches_.push_back({e.correlation, it->second, d});
}

PASTA_FUNC auto OpCounters::groups() const -> std::vector<Group> {
  std::vector<Group> out = groups_;
  std::vector<std::uint64_t> order;  // correlation ids in launch order
  if (!counters_.empty()) {
    order.reserve(launches_.size());
    for (const Launch& l : launches_) order.push_back(l.correlation);
    std::sort(order.begin(), order.end());
  }
  for (const Launch& l : launches_) {
    auto it = counters_.find(l.correlation);
    if (it == counters_.end()) continue;
    Group& g = out[l.group];
    g.measured_launches.push_back(static_cast<std::uint64_t>(
        std::lower_bound(order.begin(), order.end(), l.correlation) - order.begin()));
    // A launch with no device time (CUPTI gives none under kernel replay)
    // weighs as one nanosecond: rates of untimed launches are a plain mean.
    const std::uint64_t weight = l.device_ns ? l.device_ns : 1;
    const KernelCounters& c = it->second;
    ++g.measured;
    for (std::size_t m = 0; m < metrics::all.size(); ++m) {
      const double v = c.*metrics::all[m].field;
      if (!metrics::measured(v)) continue;
      Group::Value& x = g.values[m];
      if (x.n && c.passes > x.passes) continue;
      if (!x.n || c.passes < x.passes) x = {.passes = c.passes};
      x.sum += metrics::all[m].additive ? v : v * static_cast<double>(weight);
      ++x.n;
      x.weight_ns += weight;
    }
  }
  for (Group& g : out)  // completions of several streams may come out of launch order
    std::sort(g.measured_launches.begin(), g.measured_launches.end());
  return out;
}

PASTA_FUNC double OpCounters::total(const Group& g, std::size_t m) {
  const Group::Value& x = g.values[m];
  if (!x.n) return metrics::not_measured;
  if (metrics::all[m].additive) return x.sum / static_cast<double>(x.n) * g.launches;
  return x.sum / static_cast<double>(x.weight_ns);
}

PASTA_FUNC NameId OpCounters::op_path(std::uint64_t op) {
  if (!op) return {};
  if (auto it = paths_.find(op); it != paths_.end()) return it->second;
  std::vector<NameId> chain;
  for (std::uint64_t id = op; id && chain.size() < max_depth;) {
    const Op* o = ops_.find(id);
    if (!o) {
      if (chain.empty()) ++evicted_;
      break;
    }
    chain.push_back(o->name);
    id = o->parent;
  }
  if (chain.empty()) return {};
  std::string path;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    path += (path.empty() ? "" : "/") + std::string(name_of(*it));
  const NameId id = intern(path);
  if (paths_.size() > detail::op_table_slots) paths_.clear();  // a cache, bounded like the table
  paths_[op] = id;
  return id;
}

}  // namespace pasta::tools
