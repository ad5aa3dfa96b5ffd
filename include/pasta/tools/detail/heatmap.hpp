// Page hotness of one allocation over kernel launches, for MemHotness's
// picture: rows are page ranges (at most max_rows), columns are launches
// (at most max_columns; neighbours merge as launches accumulate). Counts
// for the launch in progress go to a small dense row array, so an access
// costs one add; they join the sparse grid when the launch changes.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

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
        cells_[{col, r}] += current_[r];
        current_[r] = 0;
      }
    pending_ = false;
  }

  bool empty() const { return cells_.empty(); }
  std::uint64_t rows() const { return rows_; }
  std::uint64_t pages_per_row() const { return 1ull << row_shift_; }
  std::uint64_t launches_per_column() const { return 1ull << column_shift_; }
  const std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t>& cells() const {
    return cells_;
  }

 private:
  void merge_columns() {
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> merged;
    for (const auto& [k, v] : cells_) merged[{k.first / 2, k.second}] += v;
    cells_.swap(merged);
    ++column_shift_;
  }

  int row_shift_;
  std::uint64_t rows_;
  std::vector<std::uint64_t> current_;
  bool pending_ = false;
  int column_shift_ = 0;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> cells_;  // (col, row) -> n
};

}  // namespace pasta::detail
