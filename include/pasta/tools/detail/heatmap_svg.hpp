// MemHotness's picture: its heatmaps drawn as one SVG, a panel per
// allocation (the report's part, compiled once in a compiled build).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <pasta/core/detail/fmt.hpp>
#include <pasta/tools/detail/heatmap.hpp>

namespace pasta::detail {

// One panel per allocation, stacked: a self-contained SVG (no scripts, no
// external references). Colour is log-scaled accesses, white to dark red.
struct HeatmapPanel {
  std::string title;
  const Heatmap* map;
};

inline std::string heatmap_svg(const std::vector<HeatmapPanel>& panels, std::uint64_t columns) {
  constexpr int width = 768, left = 60, top_pad = 34, row_px = 4, gap = 26;
  columns = std::max<std::uint64_t>(columns, 1);
  const double cell_w = static_cast<double>(width) / static_cast<double>(columns);
  std::uint64_t peak = 1;
  for (const auto& p : panels)
    for (const auto& c : p.map->cells()) peak = std::max(peak, c.n);
  int height = 20;
  for (const auto& p : panels) height += top_pad + static_cast<int>(p.map->rows()) * row_px + gap;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"14\" font-size=\"13\">Page hotness per allocation over kernel launches "
      "(colour: log accesses, max {})</text>\n",
      left + width + 20, height, left, peak);
  int y = 20;
  for (const auto& p : panels) {
    const Heatmap& m = *p.map;
    const int h = static_cast<int>(m.rows()) * row_px;
    svg += fmt::format(
        "<g class=\"panel\"><text x=\"{}\" y=\"{}\">{} ({} pages per row, {} launches per "
        "column)</text>\n<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\" "
        "stroke=\"#999\"/>\n<text x=\"4\" y=\"{}\">pages</text>\n",
        left, y + 16, p.title, m.pages_per_row(), m.launches_per_column(), left, y + top_pad - 10,
        width, h, y + top_pad - 10 + h / 2);
    for (const auto& [col, row, v] : m.cells()) {
      const double t = std::log1p(static_cast<double>(v)) / std::log1p(static_cast<double>(peak));
      const int g = static_cast<int>(std::lround(235 * (1 - t)));
      svg += fmt::format(
          "<rect class=\"cell\" x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" "
          "fill=\"rgb({},{},{})\"><title>launches {}-{}, pages {}-{}: {} accesses</title></rect>\n",
          left + cell_w * static_cast<double>(col),
          y + top_pad - 10 + static_cast<int>(row) * row_px, std::max(cell_w, 1.0), row_px,
          180 + (75 * g) / 235, g, g, col * m.launches_per_column(),
          (col + 1) * m.launches_per_column() - 1, row * m.pages_per_row(),
          (row + 1) * m.pages_per_row() - 1, v);
    }
    svg += fmt::format("<text x=\"{}\" y=\"{}\">kernel launches &#8594;</text></g>\n", left,
                       y + top_pad + h + 2);
    y += top_pad + h + gap;
  }
  return svg + "</svg>\n";
}

}  // namespace pasta::detail
