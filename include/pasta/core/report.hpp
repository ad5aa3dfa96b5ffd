// What a tool hands back: summary values, tables and notes. The profiler
// renders one Report as text, JSON and CSV (core/report_writer.hpp), so a
// tool never formats or prints by itself.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace pasta {

// A table cell. Doubles print with the column's precision.
using Cell = std::variant<std::monostate, std::int64_t, std::uint64_t, double, std::string>;

namespace detail {
template <class T>
Cell to_cell(T&& v) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, Cell>)
    return std::forward<T>(v);
  else if constexpr (std::is_same_v<U, bool>)
    return std::string(v ? "yes" : "no");
  else if constexpr (std::is_floating_point_v<U>)
    return static_cast<double>(v);
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>)
    return static_cast<std::int64_t>(v);
  else if constexpr (std::is_integral_v<U>)
    return static_cast<std::uint64_t>(v);
  else
    return std::string(std::forward<T>(v));
}
}  // namespace detail

class Table {
 public:
  Table(std::string name, std::string title, std::vector<std::string> columns)
      : name_(std::move(name)),
        title_(std::move(title)),
        columns_(std::move(columns)),
        precision_(columns_.size(), 3),
        files_only_(columns_.size(), false) {}

  template <class... T>
  Table& row(T&&... cells) {
    static_assert(sizeof...(T) > 0);
    std::vector<Cell> r;
    r.reserve(sizeof...(T));
    (r.push_back(detail::to_cell(std::forward<T>(cells))), ...);
    return row(std::move(r));
  }
  Table& row(std::vector<Cell> cells) {
    cells.resize(columns_.size());
    rows_.push_back(std::move(cells));
    return *this;
  }
  // Digits after the point for a double column in text and CSV.
  Table& precision(std::size_t column, int digits) {
    if (column < precision_.size()) precision_[column] = digits;
    return *this;
  }

  const std::string& name() const { return name_; }
  const std::string& title() const { return title_; }
  const std::vector<std::string>& columns() const { return columns_; }
  const std::vector<std::vector<Cell>>& rows() const { return rows_; }
  int precision_of(std::size_t column) const { return precision_[column]; }
  // A column for the files only (JSON, CSV), left out of the text table.
  Table& files_only(std::size_t column) {
    if (column < files_only_.size()) files_only_[column] = true;
    return *this;
  }
  bool in_text(std::size_t column) const { return !files_only_[column]; }

 private:
  std::string name_, title_;
  std::vector<std::string> columns_;
  std::vector<int> precision_;
  std::vector<bool> files_only_;
  std::vector<std::vector<Cell>> rows_;
};

// How the report page (pasta report, share/pasta/report.py) shows a report,
// said by the tool itself:
//   out.page(35).nothing("no kernel with device times", "streams");
// `order` places it among the others (lower first; a report that says none
// follows them, by name); nothing() is its one line when it recorded nothing,
// which the summary value `counted_by` tells when it is 0 (else: every table
// is empty); tables() orders its tables there (the rest follow, by name);
// picture() titles the picture it draws (<tool>.svg).
class PageHints {
 public:
  explicit PageHints(int order) : order_(order) {}
  PageHints& nothing(std::string line, std::string counted_by = {}) {
    nothing_ = std::move(line);
    counted_by_ = std::move(counted_by);
    return *this;
  }
  PageHints& tables(std::vector<std::string> order) {
    tables_ = std::move(order);
    return *this;
  }
  PageHints& picture(std::string title) {
    picture_ = std::move(title);
    return *this;
  }

  int order() const { return order_; }
  const std::string& nothing_line() const { return nothing_; }
  const std::string& counted_by() const { return counted_by_; }
  const std::vector<std::string>& table_order() const { return tables_; }
  const std::string& picture_title() const { return picture_; }

 private:
  int order_;
  std::string nothing_, counted_by_;
  std::vector<std::string> tables_;
  std::string picture_;
};

class Report {
 public:
  explicit Report(std::string tool) : tool_(std::move(tool)) {}

  // `name` is the file-name part (tool.name.csv); `title` heads the text table.
  Table& table(std::string name, std::string title, std::vector<std::string> columns) {
    tables_.emplace_back(std::move(name), std::move(title), std::move(columns));
    return tables_.back();
  }
  template <class T>
  void summary(std::string key, T&& value) {
    summary_.emplace_back(std::move(key), detail::to_cell(std::forward<T>(value)));
  }
  void note(std::string line) { notes_.push_back(std::move(line)); }
  // A file the tool wrote itself (a trace, a picture), listed with the others.
  void attach(std::string path) { attachments_.push_back(std::move(path)); }
  void mark_partial(std::string why) { partial_ = std::move(why); }
  // The part of the run the report covers (core/capture.hpp); empty = all of it.
  void set_window(std::string what) { window_ = std::move(what); }
  PageHints& page(int order) { return page_.emplace(order); }

  const std::string& tool() const { return tool_; }
  const std::vector<std::pair<std::string, Cell>>& summary() const { return summary_; }
  const std::vector<std::string>& notes() const { return notes_; }
  const std::vector<std::string>& attachments() const { return attachments_; }
  const std::string& partial() const { return partial_; }
  const std::string& window() const { return window_; }
  const std::deque<Table>& tables() const { return tables_; }
  const std::optional<PageHints>& page() const { return page_; }

 private:
  std::string tool_;
  std::vector<std::pair<std::string, Cell>> summary_;
  std::deque<Table> tables_;  // a deque: references from table() stay valid
  std::vector<std::string> notes_;
  std::vector<std::string> attachments_;
  std::string partial_;
  std::string window_;
  std::optional<PageHints> page_;
};

}  // namespace pasta
