// Which kernel launches a run analyses: a name filter (POSIX ERE searched in the
// mangled and demangled name), then skip the first N matching launches and
// keep at most M. Used by processors and by handlers that instrument.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/demangle.hpp>
#include <pasta/core/detail/regex.hpp>
#include <pasta/core/names.hpp>

namespace pasta {

class KernelSelector {
 public:
  KernelSelector() = default;
  // The profiler has already rejected (and reported) a filter that does
  // not compile; one that reaches here broken selects nothing.
  explicit KernelSelector(const Config& cfg) : skip_(cfg.launch_skip), count_(cfg.launch_count) {
    if (!cfg.kernel_filter.empty()) {
      filter_.emplace(cfg.kernel_filter);
      broken_filter_ = !filter_->valid();
    }
  }

  // Whether the name passes the filter; cached per name.
  bool matches(NameId name) {
    if (broken_filter_) return false;
    if (!filter_) return true;
    if (name.value >= cache_.size()) cache_.resize(name.value + 1, unknown);
    auto& c = cache_[name.value];
    if (c == unknown) c = search(std::string(name_of(name))) ? yes : no;
    return c == yes;
  }
  // The same test on a name not interned (a module's kernels as it loads).
  bool matches(const std::string& raw) const {
    if (broken_filter_) return false;
    return !filter_ || search(raw);
  }
  // Whether a launch's name alone can leave it out.
  bool filters_names() const { return filter_.has_value() || broken_filter_; }

  // Decides one launch, in launch order: filter, then skip, then count.
  bool select(NameId name) {
    if (!matches(name)) return false;
    const std::uint64_t index = matched_++;
    if (index < skip_) return false;
    return count_ == 0 || index - skip_ < count_;
  }

  // True once the count is exhausted: handlers may stop instrumenting.
  bool done() const { return count_ != 0 && matched_ >= skip_ + count_; }
  bool filtering() const { return filter_.has_value() || broken_filter_ || skip_ || count_; }

 private:
  enum : std::uint8_t { unknown, yes, no };
  std::optional<detail::Regex> filter_;
  bool broken_filter_ = false;
  std::uint64_t skip_ = 0, count_ = 0, matched_ = 0;
  std::vector<std::uint8_t> cache_;

  bool search(const std::string& raw) const {
    return filter_->search(detail::demangle(raw).c_str()) || filter_->search(raw.c_str());
  }
};

}  // namespace pasta
