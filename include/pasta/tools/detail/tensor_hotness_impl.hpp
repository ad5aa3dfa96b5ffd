// TensorHotness's event handlers and report (its tables): inline in header-only
// builds; in a compiled build (core/detail/api.hpp) compiled once, in the
// runtime, so a unit that includes the header parses none of it.
#pragma once

#include <pasta/tools/tensor_hotness.hpp>

namespace pasta::tools {

PASTA_FUNC void TensorHotness::report(Report& out) const {
  std::vector<const Tensor*> rows;
  for (const Tensor& t : kept_) rows.push_back(&t);
  for (const Tensor& t : pool_)
    if (t.live && t.counts.accesses()) rows.push_back(&t);
  std::sort(rows.begin(), rows.end(), [](const Tensor* a, const Tensor* b) {
    if (a->counts.accesses() != b->counts.accesses())
      return a->counts.accesses() > b->counts.accesses();
    return a->n < b->n;
  });
  AccessCounts all = outside_;
  for (const OpStats& s : by_op_) all.add(s.counts);
  out.summary("tensors allocated", allocations_);
  out.summary("tensors accessed", accessed_);
  out.summary("accesses", all.accesses());
  out.summary("bytes accessed", all.bytes());
  out.summary("bins shared with the next tensor", shared_bins_);
  out.summary("accesses outside any tensor", outside_.accesses());
  if (shared_bins_)
    out.note(
        fmt::format("{} access bins ran past the end of their tensor and were charged to it whole: "
                    "set PASTA_PAGE_BYTES=512 (the caching allocator's granularity) for exact "
                    "per-tensor counts",
                    shared_bins_));
  if (not_kept_)
    out.note(
        fmt::format("{} accessed tensors freed after the first {} have no row of their "
                    "own; their accesses are counted per operator",
                    not_kept_, max_tensors_));

  auto& tensors = out.table("tensors", "Hottest tensors",
                            {"rank", "tensor", "device", "address", "bytes", "allocated_by",
                             "accesses", "reads", "writes", "read_bytes", "write_bytes", "line"});
  std::uint64_t rank = 0;
  for (const Tensor* t : rows)
    tensors.row(++rank, fmt::format("#{}", t->n), t->device, fmt::format("0x{:x}", t->base),
                t->bytes, detail::LiveOps::label(t->op), t->counts.accesses(), t->counts.reads,
                t->counts.writes, t->counts.read_bytes, t->counts.write_bytes,
                t->source ? std::string(name_of(t->source)) : "");

  std::vector<std::uint32_t> ops;
  for (std::uint32_t i = 0; i < by_op_.size(); ++i)
    if (by_op_[i].tensors) ops.push_back(i);
  std::sort(ops.begin(), ops.end(), [&](std::uint32_t a, std::uint32_t b) {
    const auto x = by_op_[a].counts.accesses(), y = by_op_[b].counts.accesses();
    if (x != y) return x > y;
    return detail::LiveOps::label(NameId{a}) < detail::LiveOps::label(NameId{b});
  });
  auto& by_op = out.table("operators", "Accesses by allocating operator",
                          {"allocated_by", "tensors", "accesses", "bytes_accessed"});
  for (std::uint32_t i : ops)
    by_op.row(detail::LiveOps::label(NameId{i}), by_op_[i].tensors, by_op_[i].counts.accesses(),
              by_op_[i].counts.bytes());
}

PASTA_FUNC void TensorHotness::on(const pasta::TensorAlloc& e) {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(pool_.size());
    pool_.emplace_back();
  }
  const NameId op = ops_.name(e.thread, e.op);
  if (op.value >= by_op_.size()) by_op_.resize(op.value + 1);
  pool_[slot] = {.n = ++allocations_,
                 .base = e.address,
                 .bytes = e.bytes,
                 .device = e.device,
                 .op = op,
                 .source = ops_.source(e.thread, e.op),
                 .counts = {},
                 .live = true};
  // Tensors it overlaps were freed without our seeing it.
  live_.insert({e.address, e.bytes, slot}, [&](const Range& old) { retire(old.slot); });
  last_ = {};
}

PASTA_FUNC void TensorHotness::on(const TensorFree& e) {
  if (const auto r = live_.erase(e.address)) {
    retire(r->slot);
    last_ = {};
  }
}

PASTA_FUNC void TensorHotness::on(const AccessHistogram& e) {
  const AccessCounts c{.reads = e.reads,
                       .writes = e.writes,
                       .read_bytes = e.read_bytes,
                       .write_bytes = e.write_bytes};
  const Range* r = range(e.address);
  if (!r) {
    outside_.add(c);
    return;
  }
  if (e.address + e.bin_bytes > r->base + r->bytes) ++shared_bins_;
  Tensor& t = pool_[r->slot];
  OpStats& op = by_op_[t.op.value];
  if (!t.counts.accesses() && c.accesses()) {
    ++accessed_;
    ++op.tensors;
  }
  t.counts.add(c);
  op.counts.add(c);
}

PASTA_FUNC auto TensorHotness::tensor(std::uint64_t n) const -> const Tensor* {
  for (const Tensor& t : kept_)
    if (t.n == n) return &t;
  for (const Tensor& t : pool_)
    if (t.live && t.n == n) return &t;
  return nullptr;
}

PASTA_FUNC auto TensorHotness::op_stats(std::string_view op) const -> OpStats {
  for (std::size_t i = 0; i < by_op_.size(); ++i)
    if (by_op_[i].tensors && detail::LiveOps::label(NameId{static_cast<std::uint32_t>(i)}) == op)
      return by_op_[i];
  return {};
}

PASTA_FUNC auto TensorHotness::range(std::uint64_t address) -> const Range* {
  if (address - last_.base < last_.bytes) [[likely]]
    return &last_;
  const Range* r = live_.find(address);
  last_ = r ? *r : Range{};
  return r;
}

PASTA_FUNC void TensorHotness::retire(std::uint32_t slot) {
  Tensor& t = pool_[slot];
  t.live = false;
  if (t.counts.accesses()) {
    if (kept_.size() < max_tensors_)
      kept_.push_back(t);
    else
      ++not_kept_;
  }
  free_slots_.push_back(slot);
}

}  // namespace pasta::tools
