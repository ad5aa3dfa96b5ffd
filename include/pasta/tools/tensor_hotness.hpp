// Which tensors the kernels touch: device access histograms (GpuBucketing)
// charged to the framework tensors (torch::Aten) that hold them, per tensor
// and per allocating operator. Answers "which tensors are hot", where
// MemHotness sees only the allocator's large segments.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/access_counts.hpp>
#include <pasta/core/address_map.hpp>
#include <pasta/core/detail/api.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/report.hpp>
#include <pasta/tools/detail/live_ops.hpp>

namespace pasta::tools {

class TensorHotness {
 public:
  static constexpr std::string_view name = "tensor_hotness";
  // Freed tensors keep a row of their own up to this many; beyond, their
  // accesses are still counted per operator.
  static constexpr std::size_t default_max_tensors = std::size_t{1} << 20;

  struct Tensor {
    std::uint64_t n = 0;  // 1 for the first allocation seen, 2 for the next, ...
    std::uint64_t base = 0, bytes = 0;
    std::uint32_t device = 0;
    NameId op{};      // allocating operator; 0 = none
    NameId source{};  // the line of the program that called it; 0 = not known
    AccessCounts counts;
    bool live = false;
  };
  struct OpStats {
    std::uint64_t tensors = 0;  // tensors it allocated that kernels touched
    AccessCounts counts;
  };

  TensorHotness() = default;
  explicit TensorHotness(std::size_t max_tensors) : max_tensors_(max_tensors) {}

  void on(const OpBegin& e) { ops_.on(e); }
  void on(const OpEnd& e) { ops_.on(e); }

  void on(const pasta::TensorAlloc& e);

  void on(const TensorFree& e);

  // A bin goes whole to the tensor holding its first byte.
  void on(const AccessHistogram& e);

  // Tensor number `n` if it was accessed and has a row (live or kept); else nullptr.
  const Tensor* tensor(std::uint64_t n) const;
  // Accesses by tensors the operator allocated ("(no operator)" for none).
  OpStats op_stats(std::string_view op) const;
  const AccessCounts& outside() const { return outside_; }
  std::uint64_t shared_bins() const { return shared_bins_; }
  std::uint64_t tensors_accessed() const { return accessed_; }
  // Accessed tensors freed after max_tensors had been kept: no row of their own.
  std::uint64_t not_kept() const { return not_kept_; }

  void report(Report& out) const;  // tools/detail/tensor_hotness_impl.hpp

 private:
  struct Range {  // a live tensor's addresses, and where its record is
    std::uint64_t base = 0, bytes = 0;
    std::uint32_t slot = 0;
  };

  // Bins come in runs over one allocation, and so mostly over one tensor:
  // the last one found is tried first.
  const Range* range(std::uint64_t address);

  // A tensor is gone: its record is kept if kernels touched it, its slot reused.
  void retire(std::uint32_t slot);

  std::size_t max_tensors_ = default_max_tensors;
  detail::LiveOps ops_;
  BasicAddressMap<Range> live_;
  Range last_;                // a copy of the last range found; emptied whenever live_ changes
  std::vector<Tensor> pool_;  // records of live tensors (and reusable slots)
  std::vector<std::uint32_t> free_slots_;
  std::vector<Tensor> kept_;    // freed tensors that kernels touched, in free order
  std::vector<OpStats> by_op_;  // indexed by NameId of the allocating operator
  AccessCounts outside_;
  std::uint64_t allocations_ = 0, accessed_ = 0, shared_bins_ = 0, not_kept_ = 0;
};

}  // namespace pasta::tools

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/tools/detail/tensor_hotness_impl.hpp>
#endif
