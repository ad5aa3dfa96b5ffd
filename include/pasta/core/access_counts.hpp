// Building blocks for memory tools: read/write counters, and counters per
// page of one allocation (a flat array for allocations of up to dense_limit
// pages, one indexed add per access; a hash map beyond).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace pasta {

struct AccessCounts {
  std::uint64_t reads = 0, writes = 0, read_bytes = 0, write_bytes = 0;

  std::uint64_t accesses() const { return reads + writes; }
  std::uint64_t bytes() const { return read_bytes + write_bytes; }
  void add(const AccessCounts& c) {
    reads += c.reads;
    writes += c.writes;
    read_bytes += c.read_bytes;
    write_bytes += c.write_bytes;
  }
  // One access; branch-free, it runs once per recorded access.
  void add(bool read, bool write, std::uint64_t bytes) {
    reads += read;
    writes += write;
    read_bytes += bytes & -std::uint64_t(read);
    write_bytes += bytes & -std::uint64_t(write);
  }
};

class PageCounts {
 public:
  static constexpr std::uint64_t dense_limit = 1 << 18;

  explicit PageCounts(std::uint64_t page_count = 0) : page_count_(page_count) {}

  AccessCounts& at(std::uint64_t page) {
    if (page < dense_.size()) [[likely]]
      return dense_[page];
    return first_or_sparse(page);
  }

  AccessCounts get(std::uint64_t page) const {
    if (page < dense_.size()) return dense_[page];
    auto it = sparse_.find(page);
    return it == sparse_.end() ? AccessCounts{} : it->second;
  }

  // f(page, counts) for each page with at least one access, dense ones in order.
  template <class F>
  void for_each(F&& f) const {
    for (std::uint64_t i = 0; i < dense_.size(); ++i)
      if (dense_[i].accesses()) f(i, dense_[i]);
    for (const auto& [i, c] : sparse_)
      if (c.accesses()) f(i, c);
  }

  AccessCounts sum() const {
    AccessCounts total;
    for_each([&](std::uint64_t, const AccessCounts& c) { total.add(c); });
    return total;
  }

  std::size_t touched() const {
    std::size_t n = 0;
    for_each([&](std::uint64_t, const AccessCounts&) { ++n; });
    return n;
  }

 private:
  [[gnu::noinline]] AccessCounts& first_or_sparse(std::uint64_t page) {
    if (dense_.empty() && page < page_count_ && page_count_ <= dense_limit) {
      dense_.resize(page_count_);
      return dense_[page];
    }
    return sparse_[page];
  }

  std::uint64_t page_count_;
  std::vector<AccessCounts> dense_;
  std::unordered_map<std::uint64_t, AccessCounts> sparse_;
};

}  // namespace pasta
