// Page hotness of one allocation over kernel launches, for MemHotness's
// picture: rows are page ranges (at most max_rows), columns are launches
// (at most max_columns; neighbours merge as launches accumulate). Counts
// for the launch in progress go to a small dense row array, so an access
// costs one add; they join the sparse grid (a sorted vector of the cells
// with accesses) when the launch changes.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace pasta::detail {

class Heatmap {
 public:
  static constexpr std::uint64_t max_rows = 64, max_columns = 256;

  explicit Heatmap(std::uint64_t page_count = 1)
      : row_shift_(page_count > max_rows ? std::bit_width((page_count - 1) / max_rows) : 0),
        rows_(((std::max<std::uint64_t>(page_count, 1) - 1) >> row_shift_) + 1),
        current_(rows_, 0) {}

  void add(std::uint64_t page, std::uint64_t n) {
    const std::uint64_t row = page >> row_shift_;
    if (row < rows_) current_[row] += n;
    pending_ = true;
  }

  // The launch with this ordinal has ended (or another began): keep its column.
  void close(std::uint64_t launch_ordinal) {
    if (!pending_) return;
    while ((launch_ordinal >> column_shift_) >= max_columns) merge_columns();
    const std::uint64_t col = launch_ordinal >> column_shift_;
    for (std::uint64_t r = 0; r < rows_; ++r)
      if (current_[r]) {
        add_cell(col, r, current_[r]);
        current_[r] = 0;
      }
    pending_ = false;
  }

  struct Cell {
    std::uint64_t col = 0, row = 0, n = 0;
  };
  bool empty() const { return cells_.empty(); }
  std::uint64_t rows() const { return rows_; }
  std::uint64_t pages_per_row() const { return 1ull << row_shift_; }
  std::uint64_t launches_per_column() const { return 1ull << column_shift_; }
  // The cells with accesses, by column then row.
  const std::vector<Cell>& cells() const { return cells_; }
  // Accesses in one cell (0 if none).
  std::uint64_t count(std::uint64_t col, std::uint64_t row) const {
    const Cell key{col, row, 0};
    const auto it = std::lower_bound(cells_.begin(), cells_.end(), key, before);
    return it != cells_.end() && same(*it, key) ? it->n : 0;
  }

 private:
  // The cells' order: by column, then row.
  static bool before(const Cell& a, const Cell& b) {
    return a.col != b.col ? a.col < b.col : a.row < b.row;
  }
  static bool same(const Cell& a, const Cell& b) { return a.col == b.col && a.row == b.row; }
  // Columns close in launch order, so a new cell goes at or near the end: an
  // append, or an insert among the last column's rows.
  void add_cell(std::uint64_t col, std::uint64_t row, std::uint64_t n) {
    const Cell cell{col, row, n};
    if (cells_.empty() || before(cells_.back(), cell)) {
      cells_.push_back(cell);
      return;
    }
    const auto at = std::lower_bound(cells_.begin(), cells_.end(), cell, before);
    if (at != cells_.end() && same(*at, cell))
      at->n += n;
    else
      cells_.insert(at, cell);
  }
  void merge_columns() {
    for (Cell& c : cells_) c.col /= 2;
    std::stable_sort(cells_.begin(), cells_.end(), before);
    std::size_t out = 0;
    for (std::size_t i = 0; i < cells_.size(); ++i) {
      if (out && same(cells_[out - 1], cells_[i]))
        cells_[out - 1].n += cells_[i].n;
      else
        cells_[out++] = cells_[i];
    }
    cells_.resize(out);
    ++column_shift_;
  }

  int row_shift_;
  std::uint64_t rows_;
  std::vector<std::uint64_t> current_;
  bool pending_ = false;
  int column_shift_ = 0;
  // A sorted vector, not a map: a node allocation for every (launch,
  // allocation) pair was most of an access's cost in bench/dispatch.cpp.
  std::vector<Cell> cells_;
};

}  // namespace pasta::detail
