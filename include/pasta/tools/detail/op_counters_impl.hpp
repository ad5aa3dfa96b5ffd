// OpCounters's event handlers and report (the per-operator profile as JSON): inline in header-only
// builds; in a compiled build (core/detail/api.hpp) compiled once, in the
// runtime, so a unit that includes the header parses none of it.
#pragma once

#include <nlohmann/json.hpp>

#include <pasta/tools/op_counters.hpp>

namespace pasta::tools {

PASTA_FUNC void OpCounters::report(Report& out) const {
  out.page(20)
      .nothing("no hardware counters measured: run with --counters", "measured")
      .tables({"verdicts", "operators", "kernel_verdicts"});
  const std::vector<Group> gs = groups();
  std::uint64_t launches = 0, measured = 0, unmeasured = 0;
  for (const Group& g : gs) {
    launches += g.launches;
    measured += g.measured;
    if (!g.measured) unmeasured += g.launches;
  }
  const std::uint64_t propagated = launches - measured - unmeasured;
  const std::uint64_t stray =
      counters_.size() - std::min<std::uint64_t>(measured, counters_.size());

  const std::map<std::string, OpRow> ops = by_operator(gs);
  auto intensity = [](const std::vector<double>& v) {
    KernelCounters c{};
    for (std::size_t m = 0; m < metrics::all.size(); ++m) c.*metrics::all[m].field = v[m];
    return metrics::arithmetic_intensity(c);
  };
  auto group_values = [&](const Group& g) {
    std::vector<double> v;
    for (std::size_t m = 0; m < metrics::all.size(); ++m) v.push_back(total(g, m));
    return v;
  };
  // Not measured: an empty cell, null in JSON.
  auto cell = [](double v) { return metrics::measured(v) ? Cell(v) : Cell(std::monostate{}); };
  auto json_number = [](double v) { return metrics::measured(v) ? nlohmann::json(v) : nullptr; };

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

  std::vector<std::string> columns{"operator", "launches", "measured", "propagated", "device_ms"};
  for (const auto& m : metrics::all) columns.emplace_back(m.key);
  columns.emplace_back("arithmetic_intensity");
  auto& op_table =
      out.table("operators", "Counters per operator (ncu metric names in the JSON)", columns);
  for (const auto& [path, r] : ops) {
    std::vector<Cell> row{path.empty() ? "(outside every operator)" : path, r.launches, r.measured,
                          r.propagated, r.device_ns * 1e-6};
    for (double v : r.values) row.push_back(cell(v));
    row.push_back(cell(intensity(r.values)));
    op_table.row(std::move(row));
  }

  verdicts(out, gs, ops);

  // The profile document: operators -> kernels -> metrics.
  nlohmann::json metric_names = nlohmann::json::object();
  for (const auto& m : metrics::all)
    metric_names[std::string(m.key)] = {{"ncu", m.ncu}, {"unit", m.unit}};
  auto kernel_json = [&](const Group& g) {
    nlohmann::json k{{"kernel", std::string(name_of(g.sig.kernel))},
                     {"grid", {g.sig.grid.x, g.sig.grid.y, g.sig.grid.z}},
                     {"block", {g.sig.block.x, g.sig.block.y, g.sig.block.z}},
                     {"launches", g.launches},
                     {"measured", g.measured},
                     {"measured_launches", g.measured_launches},
                     {"propagated", g.measured ? g.launches - g.measured : 0},
                     {"device_ns", g.device_ns}};
    if (g.measured) {
      const auto v = group_values(g);
      nlohmann::json ms = nlohmann::json::object();
      for (std::size_t m = 0; m < metrics::all.size(); ++m)
        ms[std::string(metrics::all[m].key)] = json_number(v[m]);
      ms["arithmetic_intensity"] = json_number(intensity(v));
      k["metrics"] = std::move(ms);
    } else {
      k["metrics"] = nullptr;
    }
    return k;
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
    nlohmann::json totals = nlohmann::json::object();
    for (std::size_t m = 0; m < metrics::all.size(); ++m)
      totals[std::string(metrics::all[m].key)] = json_number(r.values[m]);
    totals["arithmetic_intensity"] = json_number(intensity(r.values));
    doc["operators"].push_back({{"path", path},
                                {"operator", path.substr(path.rfind('/') + 1)},
                                {"launches", r.launches},
                                {"measured", r.measured},
                                {"propagated", r.propagated},
                                {"device_ns", r.device_ns},
                                {"metrics", r.measured ? totals : nlohmann::json(nullptr)},
                                {"kernels", std::move(kernels)}});
  }
  if (const auto why = detail::make_dirs(detail::parent_dir(path_)); !why.empty()) {
    out.summary("error", why);
  } else if (const auto why2 = detail::write_file(path_, doc.dump(2) + "\n"); !why2.empty()) {
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
  auto input = [](const std::vector<double>& v, std::uint64_t device_ns, std::uint64_t launches) {
    auto get = [&](double KernelCounters::*field) {
      for (std::size_t m = 0; m < metrics::all.size(); ++m)
        if (metrics::all[m].field == field) return metrics::measured(v[m]) ? v[m] : 0.0;
      return 0.0;
    };
    return detail::RooflineInput{
        .device_ns = static_cast<double>(device_ns),
        .launches = static_cast<double>(launches),
        .dram_bytes = get(&KernelCounters::dram_bytes_read) + get(&KernelCounters::dram_bytes_write),
        .fp_flops = get(&KernelCounters::flops),
        .dram_pct = get(&KernelCounters::dram_throughput_pct),
        .sm_pct = get(&KernelCounters::sm_throughput_pct),
        .tensor_pct = get(&KernelCounters::tensor_active_pct)};
  };
  struct Row {
    std::string what;
    detail::RooflineInput in;
    detail::Verdict v;
  };
  auto rows_of = [&](auto&& each) {
    std::vector<Row> rows;
    each([&](std::string what, const detail::RooflineInput& in) {
      rows.push_back({std::move(what), in, detail::judge(in, c)});
    });
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      if (a.v.saving_ns != b.v.saving_ns) return a.v.saving_ns > b.v.saving_ns;
      return a.in.device_ns > b.in.device_ns;
    });
    return rows;
  };
  const std::vector<Row> by_op = rows_of([&](auto add) {
    for (const auto& [path, r] : ops)
      if (r.measured) add(path.empty() ? "(outside every operator)" : path,
                          input(r.values, r.device_ns, r.launches));
  });
  const std::vector<Row> by_kernel = rows_of([&](auto add) {
    for (const Group& g : gs) {
      if (!g.measured) continue;
      std::vector<double> v;
      for (std::size_t m = 0; m < metrics::all.size(); ++m) v.push_back(total(g, m));
      add(std::string(name_of(g.sig.kernel)) + "\t" +
              (g.sig.path.value ? std::string(name_of(g.sig.path)) : std::string()),
          input(v, g.device_ns, g.launches));
    }
  });
  const double ms = 1e-6;
  std::uint64_t device_ns = 0;
  for (const Group& g : gs) device_ns += g.device_ns;
  auto table = [&](const char* name, const char* title, bool kernels, const std::vector<Row>& rows) {
    std::vector<std::string> columns{"rank"};
    if (kernels) columns.emplace_back("kernel");
    for (const char* col : {"operator", "device_ms", "bound", "dram_throughput_pct",
                            "sm_throughput_pct", "tensor_active_pct", "arithmetic_intensity",
                            "achieved_tflops", "attainable_ms", "saving_ms", "saving_pct"})
      columns.emplace_back(col);
    auto& t = out.table(name, title, columns);
    const std::size_t first = kernels ? 3 : 2;
    for (std::size_t col : {first, first + 7, first + 8}) t.precision(col, 3);
    for (std::size_t col : {first + 2, first + 3, first + 4, first + 9}) t.precision(col, 1);
    std::uint64_t rank = 0;
    for (const Row& r : rows) {
      std::vector<Cell> cells{++rank};
      std::string what = r.what;
      if (kernels) {
        const auto tab = what.find('\t');
        cells.emplace_back(what.substr(0, tab));
        what = what.substr(tab + 1);
      }
      cells.emplace_back(what);
      cells.emplace_back(r.in.device_ns * ms);
      cells.emplace_back(std::string(detail::to_string(r.v.bound)));
      cells.emplace_back(r.in.dram_pct);
      cells.emplace_back(r.in.sm_pct);
      cells.emplace_back(r.in.tensor_pct);
      cells.emplace_back(r.v.intensity);
      cells.emplace_back(r.v.flops_per_s * 1e-12);
      cells.emplace_back(c.known() ? Cell(r.v.attainable_ns * ms) : Cell{});
      cells.emplace_back(c.known() ? Cell(r.v.saving_ns * ms) : Cell{});
      cells.emplace_back(c.known() && device_ns
                             ? Cell(100.0 * r.v.saving_ns / static_cast<double>(device_ns))
                             : Cell{});
      t.row(std::move(cells));
    }
  };
  table("verdicts", "Fix first: operators by the device time they would save at the GPU's ceilings",
        false, by_op);
  table("kernel_verdicts", "What bounds each kernel (by signature and operator)", true, by_kernel);
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
