// tools::StallBlame's blame forest: allocations hold tensors, tensors the
// views operators read them through, each split over the operators whose
// loads waited; built from the join's blame, drawn as dot and as SVG.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <pasta/core/detail/demangle.hpp>
#include <pasta/core/detail/fmt.hpp>
#include <pasta/tools/detail/live_ops.hpp>
#include <pasta/tools/detail/stall_join.hpp>
#include <pasta/tools/detail/stall_targets.hpp>
#include <pasta/tools/detail/units.hpp>

namespace pasta::detail {

// A node of the forest: an allocation (the allocator's segment), a tensor,
// a view, or an operator (or kernel) under one of them, with its samples.
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

namespace stall {

// The join's blame as a forest: each target under the ones it lies in (a
// view under its tensor, a tensor under its allocation), and under it the
// operators, or with none the kernels, that waited for it. Largest first.
inline BlameNode blame_forest(const std::map<std::pair<AccessKey, std::string>, double>& blamed,
                              const Targets& targets) {
  BlameNode forest;
  for (const auto& [key, n] : blamed) {
    std::vector<std::uint32_t> path{key.first.target};  // from the target up to its root
    while (path.back() != no_target && targets[path.back()].parent != no_target)
      path.push_back(targets[path.back()].parent);
    BlameNode* node = &forest;
    for (std::size_t i = path.size(); i-- > 0;) {
      node = &node->child(targets.node_label(path[i]));
      node->samples += n;
    }
    const std::string op =
        key.first.op ? LiveOps::label(key.first.op) : short_kernel_name(demangle(key.second));
    node = &node->child(op);
    node->samples += n;
  }
  forest.sort();
  return forest;
}

// Each node keeps its `keep` largest children that hold at least
// `min_samples`; the others become one leaf "(N more)" holding their sum.
inline void prune(BlameNode& node, std::size_t keep, double min_samples) {
  node.sort();
  std::size_t kept = 0;
  while (kept < node.children.size() && kept < keep && node.children[kept].samples >= min_samples)
    ++kept;
  if (node.children.size() > kept + 1) {  // merging one child alone hides it for nothing
    BlameNode rest{fmt::format("({} more)", node.children.size() - kept), 0, {}};
    for (std::size_t i = kept; i < node.children.size(); ++i)
      rest.samples += node.children[i].samples;
    node.children.resize(kept);
    node.children.push_back(std::move(rest));
  }
  for (auto& c : node.children) prune(c, keep, min_samples);
}

// A map's entries as a vector, the largest value first.
template <class K>
std::vector<std::pair<K, double>> largest_first(const std::map<K, double>& m) {
  std::vector<std::pair<K, double>> out(m.begin(), m.end());
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace stall

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
    const double share = share_of(n.samples, total);
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
        const double heat = share_of(c.samples, total);
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
