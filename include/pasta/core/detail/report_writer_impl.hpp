// Definitions for core/report_writer.hpp, JSON included: inline in
// header-only builds, compiled once otherwise (core/detail/api.hpp).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>
#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/files.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/report_writer.hpp>

namespace pasta::detail {

PASTA_FUNC std::string cell_text(const Cell& c, int precision) {
  return std::visit(
      [&](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>)
          return "";
        else if constexpr (std::is_same_v<V, double>)
          return fmt::format("{:.{}f}", v, precision);
        else if constexpr (std::is_same_v<V, std::string>)
          return v;
        else
          return fmt::format("{}", v);
      },
      c);
}

inline nlohmann::json cell_json(const Cell& c) {
  return std::visit(
      [](const auto& v) -> nlohmann::json {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>)
          return nullptr;
        else
          return v;
      },
      c);
}

inline bool is_number(const Cell& c) {
  return std::holds_alternative<std::int64_t>(c) || std::holds_alternative<std::uint64_t>(c) ||
         std::holds_alternative<double>(c);
}

// Text cells longer than this are cut in the middle ("abc...xyz"); files keep them whole.
inline constexpr std::size_t max_text_cell = 72;

inline std::string clip(std::string s) {
  if (s.size() <= max_text_cell) return s;
  const std::size_t keep = (max_text_cell - 3) / 2;
  return s.substr(0, keep) + "..." + s.substr(s.size() - keep);
}

// `top` limits the rows shown per table; the files always hold every row.
// `console`: what the program's terminal gets, short: a tool's first table
// with rows, at most `console_rows` of them, and a line naming the others (the
// files hold them all); a tool whose tables all have none is one line.
PASTA_FUNC std::string render_text(const Report& r, std::size_t top, bool console) {
  const bool nothing = !r.tables().empty() &&
                       std::all_of(r.tables().begin(), r.tables().end(),
                                   [](const Table& t) { return t.rows().empty(); });
  if (console && nothing)
    return fmt::format("== pasta {}: nothing recorded{}\n", r.tool(),
                       r.partial().empty() ? "" : " (partial: " + r.partial() + ")");
  std::string out = fmt::format("== pasta {} ==\n", r.tool());
  if (!r.partial().empty()) out += fmt::format("PARTIAL REPORT: {}\n", r.partial());
  if (!r.window().empty()) out += fmt::format("WINDOW: {}\n", r.window());
  for (const auto& [key, value] : r.summary())
    out += fmt::format("  {}: {}\n", key, cell_text(value, 3));
  std::size_t tables_shown = 0;
  std::vector<std::string> more;
  for (const Table& t : r.tables()) {
    if (console && t.rows().empty()) continue;
    if (console && tables_shown++ > 0) {
      more.push_back(t.name());
      continue;
    }
    const std::size_t shown = std::min(console ? std::min(top, console_rows) : top, t.rows().size());
    out += fmt::format("\n{}", t.title());
    if (shown < t.rows().size()) out += fmt::format(" (top {} of {})", shown, t.rows().size());
    out += "\n";
    std::vector<std::vector<std::string>> cells(shown);
    std::vector<std::size_t> width(t.columns().size());
    for (std::size_t c = 0; c < t.columns().size(); ++c) width[c] = t.columns()[c].size();
    for (std::size_t i = 0; i < shown; ++i) {
      for (std::size_t c = 0; c < t.columns().size(); ++c) {
        cells[i].push_back(clip(cell_text(t.rows()[i][c], t.precision_of(c))));
        width[c] = std::max(width[c], cells[i][c].size());
      }
    }
    auto line = [&](auto&& text_of, auto&& right_aligned) {
      std::string l = " ";
      for (std::size_t c = 0; c < width.size(); ++c) {
        if (!t.in_text(c)) continue;
        l += right_aligned(c) ? fmt::format(" {:>{}}", text_of(c), width[c])
                              : fmt::format(" {:<{}}", text_of(c), width[c]);
      }
      while (!l.empty() && l.back() == ' ') l.pop_back();
      return l + "\n";
    };
    auto numeric = [&](std::size_t c) { return !t.rows().empty() && is_number(t.rows()[0][c]); };
    out += line([&](std::size_t c) { return t.columns()[c]; }, numeric);
    for (std::size_t i = 0; i < shown; ++i)
      out += line([&](std::size_t c) { return cells[i][c]; },
                  [&](std::size_t c) { return is_number(t.rows()[i][c]); });
  }
  if (!more.empty()) {
    std::string names;
    for (const auto& n : more) names += (names.empty() ? "" : ", ") + n;
    out += fmt::format("  (and {} in {}.txt: {})\n",
                       more.size() == 1 ? std::string("one more table")
                                        : fmt::format("{} more tables", more.size()),
                       r.tool(), names);
  }
  for (const auto& n : r.notes()) out += fmt::format("\n{}", n);
  if (!r.notes().empty()) out += "\n";
  return out;
}

inline nlohmann::json to_json(const Report& r) {
  nlohmann::json j = nlohmann::json::object();
  j["tool"] = r.tool();
  if (!r.partial().empty()) j["partial"] = r.partial();
  if (!r.window().empty()) j["window"] = r.window();
  nlohmann::json summary = nlohmann::json::object();
  for (const auto& [key, value] : r.summary()) summary[key] = cell_json(value);
  j["summary"] = std::move(summary);
  nlohmann::json tables = nlohmann::json::object();
  for (const Table& t : r.tables()) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : t.rows()) {
      nlohmann::json o = nlohmann::json::object();
      for (std::size_t c = 0; c < t.columns().size(); ++c) o[t.columns()[c]] = cell_json(row[c]);
      rows.push_back(std::move(o));
    }
    tables[t.name()] = std::move(rows);
  }
  j["tables"] = std::move(tables);
  if (!r.notes().empty()) j["notes"] = r.notes();
  if (!r.attachments().empty()) j["files"] = r.attachments();
  if (const auto& page = r.page()) {
    nlohmann::json& p = j["page"] = {{"order", page->order()}};
    if (!page->nothing_line().empty()) p["nothing"] = page->nothing_line();
    if (!page->counted_by().empty()) p["counted_by"] = page->counted_by();
    if (!page->table_order().empty()) p["tables"] = page->table_order();
    if (!page->picture_title().empty()) p["picture"] = page->picture_title();
  }
  return j;
}

// RFC 4180: fields with a comma, quote or line break are quoted.
inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) {
    if (ch == '"') q += '"';
    q += ch;
  }
  return q + "\"";
}

PASTA_FUNC std::string to_csv(const Table& t) {
  std::string out;
  for (std::size_t c = 0; c < t.columns().size(); ++c)
    out += (c ? "," : "") + csv_field(t.columns()[c]);
  out += "\n";
  for (const auto& row : t.rows()) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      const int digits = std::holds_alternative<double>(row[c]) ? 9 : t.precision_of(c);
      out += (c ? "," : "") + csv_field(cell_text(row[c], digits));
    }
    out += "\n";
  }
  return out;
}

// Creates the output directory; logs once and returns false if it cannot.
PASTA_FUNC bool prepare_output_dir(const Config& cfg) {
  if (cfg.output_dir.empty()) return false;
  std::string why = make_dirs(cfg.output_dir);
  if (why.empty() && ::access(cfg.output_dir.c_str(), W_OK) != 0) why = std::strerror(errno);
  if (why.empty()) return true;
  log_once("outdir:" + cfg.output_dir,
           fmt::format("cannot write reports to '{}' ({}); set PASTA_OUTPUT_DIR to a writable "
                       "directory. Text reports still go to {}",
                       cfg.output_dir, why, cfg.print == PrintTo::stdout_ ? "stdout" : "stderr"));
  return false;
}

// Prints and writes one report. Returns the files written.
PASTA_FUNC std::vector<std::string> write_report(const Report& r, const Config& cfg) {
  std::vector<std::string> written;
  const std::string text = render_text(r, cfg.top, false);
  if (cfg.print != PrintTo::none) {
    std::FILE* to = cfg.print == PrintTo::stdout_ ? stdout : stderr;
    const std::string console = render_text(r, cfg.top, true);
    std::fwrite(console.data(), 1, console.size(), to);
    std::fflush(to);
  }
  if (cfg.formats == 0 || !prepare_output_dir(cfg)) return written;
  auto put = [&](const std::string& file, const std::string& content) {
    const std::string path = join_path(cfg.output_dir, file);
    if (auto why = write_file(path, content); why.empty())
      written.push_back(path);
    else
      log_once("write:" + cfg.output_dir,  // a full disk fails every file: one line
               fmt::format("report not written: {}; later failures in {}/ are not shown", why,
                           cfg.output_dir));
  };
  try {
    if (cfg.formats & format::text) put(r.tool() + ".txt", text);
    if (cfg.formats & format::json)
      put(r.tool() + ".json",
          to_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    if (cfg.formats & format::csv)
      for (const Table& t : r.tables()) put(r.tool() + "." + t.name() + ".csv", to_csv(t));
  } catch (const std::exception& e) {
    log_once("report:" + r.tool(), fmt::format("report of {} not written: {}", r.tool(), e.what()));
  }
  return written;
}

}  // namespace pasta::detail
