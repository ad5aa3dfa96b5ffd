// ModuleSummary's event handlers and report: inline in header-only builds,
// compiled once in a compiled build (core/detail/api.hpp).
#pragma once

#include <algorithm>
#include <functional>

#include <pasta/tools/detail/units.hpp>
#include <pasta/tools/module_summary.hpp>

namespace pasta::detail {
// The key of the largest value in `m` (the smallest key on ties); {} if empty.
template <class Map>
typename Map::key_type top_key(const Map& m) {
  typename Map::key_type best{};
  std::uint64_t most = 0;
  bool any = false;
  for (const auto& [k, v] : m)
    if (!any || v > most || (v == most && k.value < best.value)) best = k, most = v, any = true;
  return best;
}
}  // namespace pasta::detail

namespace pasta::tools {

PASTA_FUNC ModuleSummary::Stats& ModuleSummary::at(NameId module) {
  auto [it, added] = modules_.try_emplace(module);
  if (added && module) {  // until a call of it says otherwise: the parent its name gives
    const std::string_view text = name_of(module);
    if (const auto dot = text.rfind('.'); dot != std::string_view::npos) {
      it->second.parent = intern(text.substr(0, dot));
      it->second.depth = static_cast<std::uint32_t>(std::count(text.begin(), text.end(), '.'));
    }
  }
  return it->second;
}

PASTA_FUNC void ModuleSummary::on(const ModuleCall& e) {
  Stats& s = at(e.module);
  s.class_name = e.class_name;
  ++s.calls;
  if (e.source) ++s.sources[e.source];
  if (e.parent == e.module) return;  // a module calling itself: timed once, outermost
  s.parent = e.parent;
  s.depth = e.depth;
  s.host_ns += duration_ns(e.begin_ns, e.end_ns);
}

PASTA_FUNC void ModuleSummary::on(const OpBegin& e) {
  table_.put(Instance{e.id, e.module, e.source, e.name, e.backward != 0});
  ++ops_;
  ++at(e.module).ops;
  if (e.module) ++ops_in_module_;
  if (e.source) {
    ++ops_with_line_;
    ++lines_[e.source].calls;
  }
}

PASTA_FUNC void ModuleSummary::on(const KernelComplete& e) {
  const std::uint64_t d = duration_ns(e.start_ns, e.end_ns);
  ++kernels_seen_;
  device_ns_ += d;
  const Instance* inst = table_.find(e.op);
  const NameId module = inst ? inst->module : NameId{};
  Stats& s = at(module);
  ++s.launches;
  s.device_ns += d;
  (inst && inst->backward ? s.backward_ns : s.forward_ns) += d;
  KernelStats& k = kernels_[module][e.name];
  ++k.launches;
  k.device_ns += d;
  if (module) ++kernels_in_module_;
  if (inst && inst->source) {
    LineStats& l = lines_[inst->source];
    ++l.launches;
    l.device_ns += d;
    l.op_ns[inst->name] += d;
    l.module_ns[module] += d;
  }
}

PASTA_FUNC void ModuleSummary::copy(std::uint64_t op, std::uint64_t d) {
  const Instance* inst = table_.find(op);
  Stats& s = at(inst ? inst->module : NameId{});
  ++s.copies;
  s.copy_ns += d;
}

PASTA_FUNC void ModuleSummary::on(const TensorAlloc& e) {
  const Instance* inst = table_.find(e.op);
  Stats& s = at(inst ? inst->module : NameId{});
  s.alloc_bytes += e.bytes;
  s.peak_bytes = std::max(s.peak_bytes, e.total_allocated);
}

PASTA_FUNC const ModuleSummary::Stats* ModuleSummary::stats(std::string_view module) const {
  for (const auto& [id, s] : modules_)
    if ((id ? name_of(id) : no_module) == module) return &s;
  return nullptr;
}

PASTA_FUNC const ModuleSummary::LineStats* ModuleSummary::line(std::string_view source) const {
  for (const auto& [id, l] : lines_)
    if (name_of(id) == source) return &l;
  return nullptr;
}

PASTA_FUNC NameId ModuleSummary::parent_of(NameId module) const {
  if (auto it = modules_.find(module); it != modules_.end()) return it->second.parent;
  const std::string_view text = name_of(module);
  const auto dot = text.rfind('.');
  return dot == std::string_view::npos ? NameId{} : intern(text.substr(0, dot));
}

// Each module's work added to it and to every module above it (once each,
// against parents that loop in a damaged trace).
PASTA_FUNC std::unordered_map<NameId, ModuleSummary::Totals> ModuleSummary::totals() const {
  std::unordered_map<NameId, Totals> out;
  std::vector<NameId> chain;
  for (const auto& [id, s] : modules_) {
    if (!id) continue;
    chain.clear();
    for (NameId m = id; m && chain.size() < 256; m = parent_of(m)) {
      if (std::find(chain.begin(), chain.end(), m) != chain.end()) break;
      chain.push_back(m);
      Totals& t = out[m];
      t.launches += s.launches;
      t.device_ns += s.device_ns;
      t.forward_ns += s.forward_ns;
      t.backward_ns += s.backward_ns;
      t.alloc_bytes += s.alloc_bytes;
      t.peak_bytes = std::max(t.peak_bytes, s.peak_bytes);
    }
  }
  return out;
}

PASTA_FUNC std::uint64_t ModuleSummary::device_total_ns(std::string_view module) const {
  for (const auto& [id, t] : totals())
    if (name_of(id) == module) return t.device_ns;
  if (module == no_module)
    if (auto it = modules_.find(NameId{}); it != modules_.end()) return it->second.device_ns;
  return 0;
}

PASTA_FUNC void ModuleSummary::report(Report& out) const {
  const auto pct = detail::share_pct;
  const auto total = totals();
  std::uint64_t calls = 0;
  for (const auto& [id, s] : modules_) calls += s.calls;
  out.summary("modules", total.size());
  out.summary("module calls", calls);
  out.summary("operator calls", ops_);
  out.summary("operator calls in a module (%)", pct(ops_in_module_, ops_));
  out.summary("operator calls with a source line (%)", pct(ops_with_line_, ops_));
  out.summary("kernels", kernels_seen_);
  out.summary("kernels in a module (%)", pct(kernels_in_module_, kernels_seen_));
  out.summary("device time (ms)", device_ns_ * detail::ms_per_ns);
  if (total.empty()) {
    // No module at all: the tables would hold one "(no module)" row; they stay empty.
    out.table("modules", "Modules by device time", {"module"});
    out.table("module_kernels", "Kernels each module launched itself", {"module"});
    out.table("lines", "Lines of the program by device time", {"source"});
    if (ops_)
      out.note(
          "no operator ran inside an nn.Module: modules are followed in Python 3.12 or newer, "
          "with PASTA_MODULES on (the log says why when they are not)");
    return;
  }
  const std::vector<NameId> order = tree_order(total);
  modules_table(out, order, total);
  kernels_table(out, order);
  lines_table(out);
}

// The tree, depth first: roots and then each module's children by total device time.
PASTA_FUNC std::vector<NameId> ModuleSummary::tree_order(
    const std::unordered_map<NameId, Totals>& total) const {
  std::unordered_map<NameId, std::vector<NameId>> children;
  std::vector<NameId> roots;
  for (const auto& [id, t] : total) {
    const NameId p = parent_of(id);
    (p && total.count(p) ? children[p] : roots).push_back(id);
  }
  auto by_time = [&](NameId a, NameId b) {
    const auto &x = total.at(a), &y = total.at(b);
    if (x.device_ns != y.device_ns) return x.device_ns > y.device_ns;
    return name_of(a) < name_of(b);
  };
  std::vector<NameId> order;
  std::function<void(NameId)> visit = [&](NameId m) {
    if (order.size() > total.size()) return;  // a loop
    order.push_back(m);
    auto& kids = children[m];
    std::sort(kids.begin(), kids.end(), by_time);
    for (NameId k : kids) visit(k);
  };
  std::sort(roots.begin(), roots.end(), by_time);
  for (NameId r : roots) visit(r);
  return order;
}

PASTA_FUNC void ModuleSummary::modules_table(Report& out, const std::vector<NameId>& order,
                                             const std::unordered_map<NameId, Totals>& total) const {
  const auto pct = detail::share_pct;
  constexpr double ms = detail::ms_per_ns;
  auto& t = out.table("modules", "Modules by device time (self: the module's own operators)",
                      {"module", "class", "parent", "depth", "calls", "ops", "launches_self",
                       "launches_total", "device_self_ms", "device_total_ms", "device_total_pct",
                       "forward_total_ms", "backward_total_ms", "copies", "host_ms",
                       "alloc_bytes", "peak_bytes", "source", "device_ns_self",
                       "device_ns_total"});
  for (std::size_t c : {8u, 9u, 11u, 12u, 14u}) t.precision(c, 3);
  t.precision(10, 1);
  t.files_only(18).files_only(19);
  static const Stats none;
  for (NameId m : order) {
    const auto it = modules_.find(m);
    const Stats& s = it != modules_.end() ? it->second : none;
    const Totals& tt = total.at(m);
    const NameId parent = parent_of(m);
    t.row(std::string(name_of(m)), s.class_name ? std::string(name_of(s.class_name)) : "",
          parent ? std::string(name_of(parent)) : "", s.depth, s.calls, s.ops, s.launches,
          tt.launches, s.device_ns * ms, tt.device_ns * ms, pct(tt.device_ns, device_ns_),
          tt.forward_ns * ms, tt.backward_ns * ms, s.copies, s.host_ns * ms, tt.alloc_bytes,
          tt.peak_bytes, s.sources.empty() ? "" : std::string(name_of(detail::top_key(s.sources))),
          s.device_ns, tt.device_ns);
  }
  if (auto it = modules_.find(NameId{}); it != modules_.end()) {
    const Stats& s = it->second;
    t.row(std::string(no_module), "", "", 0, 0, s.ops, s.launches, s.launches, s.device_ns * ms,
          s.device_ns * ms, pct(s.device_ns, device_ns_), s.forward_ns * ms, s.backward_ns * ms,
          s.copies, Cell{}, s.alloc_bytes, s.peak_bytes, "", s.device_ns, s.device_ns);
  }
}

PASTA_FUNC void ModuleSummary::kernels_table(Report& out, const std::vector<NameId>& order) const {
  auto& k = out.table("module_kernels", "Kernels each module launched itself",
                      {"module", "kernel", "launches", "device_ms", "device_ns"});
  k.precision(3, 3);
  k.files_only(4);
  std::vector<NameId> kernel_modules = order;
  if (kernels_.count(NameId{})) kernel_modules.push_back(NameId{});
  for (NameId m : kernel_modules) {
    auto it = kernels_.find(m);
    if (it == kernels_.end()) continue;
    std::vector<std::pair<NameId, KernelStats>> rows(it->second.begin(), it->second.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      if (a.second.device_ns != b.second.device_ns) return a.second.device_ns > b.second.device_ns;
      return name_of(a.first) < name_of(b.first);
    });
    for (const auto& [kernel, ks] : rows)
      k.row(m ? std::string(name_of(m)) : std::string(no_module), std::string(name_of(kernel)),
            ks.launches, ks.device_ns * detail::ms_per_ns, ks.device_ns);
  }
}

PASTA_FUNC void ModuleSummary::lines_table(Report& out) const {
  std::vector<std::pair<NameId, const LineStats*>> lines;
  for (const auto& [id, l] : lines_) lines.emplace_back(id, &l);
  std::sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) {
    if (a.second->device_ns != b.second->device_ns) return a.second->device_ns > b.second->device_ns;
    return name_of(a.first) < name_of(b.first);
  });
  auto& l = out.table("lines", "Lines of the program by the device time of the operators they call",
                      {"rank", "source", "device_ms", "device_pct", "launches", "calls",
                       "top_operator", "module"});
  l.precision(2, 3);
  l.precision(3, 1);
  std::uint64_t rank = 0;
  for (const auto& [id, ls] : lines) {
    const NameId module = detail::top_key(ls->module_ns);
    l.row(++rank, std::string(name_of(id)), ls->device_ns * detail::ms_per_ns,
          detail::share_pct(ls->device_ns, device_ns_), ls->launches, ls->calls,
          ls->op_ns.empty() ? "" : std::string(name_of(detail::top_key(ls->op_ns))),
          ls->module_ns.empty() ? "" : std::string(module ? name_of(module) : no_module));
  }
}

}  // namespace pasta::tools
