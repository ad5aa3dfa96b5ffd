// The program's device memory, saved before a launch pasta replays itself
// and restored before every pass after the first and once more at the end,
// so each pass starts from what the program had and the program's own launch
// then runs on it unchanged.
//
// Which memory a kernel writes is not known, so every allocation is saved:
// the handler reports each one from the driver's allocation calls
// (cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged, cuMemAllocAsync and the
// pool variant, cuMemMap) and each free or unmap. Allocations made before
// the handler started are not known and so not saved; nor is host memory
// a kernel writes through a mapped pointer. The copy goes to one backup
// buffer in device memory, grown as the program allocates.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>
#include <pasta/nv/detail/driver.hpp>

namespace pasta::nv::detail {

// The live allocations, by start address. Safe to call from any thread.
class Allocations {
 public:
  struct Range {
    std::uint64_t base, bytes;
    friend bool operator==(const Range&, const Range&) = default;
  };

  // A new allocation: any it overlaps were freed without pasta seeing it.
  void add(std::uint64_t base, std::uint64_t bytes) {
    if (!bytes) return;
    std::lock_guard lock(mutex_);
    erase_overlapping(base, bytes);
    ranges_.emplace(base, bytes);
    total_ += bytes;
  }
  // The allocation that starts at `base` freed.
  void remove(std::uint64_t base) {
    std::lock_guard lock(mutex_);
    if (auto it = ranges_.find(base); it != ranges_.end()) {
      total_ -= it->second;
      ranges_.erase(it);
    }
  }
  // Every allocation inside [base, base + bytes) gone (an unmapped range).
  void remove(std::uint64_t base, std::uint64_t bytes) {
    std::lock_guard lock(mutex_);
    erase_overlapping(base, bytes);
  }
  std::uint64_t bytes() const {
    std::lock_guard lock(mutex_);
    return total_;
  }
  std::size_t count() const {
    std::lock_guard lock(mutex_);
    return ranges_.size();
  }
  std::vector<Range> ranges() const {
    std::lock_guard lock(mutex_);
    std::vector<Range> out;
    out.reserve(ranges_.size());
    for (const auto& [base, bytes] : ranges_) out.push_back({base, bytes});
    return out;
  }

 private:
  void erase_overlapping(std::uint64_t base, std::uint64_t bytes) {
    auto it = ranges_.lower_bound(base);
    if (it != ranges_.begin() && std::prev(it)->first + std::prev(it)->second > base) --it;
    while (it != ranges_.end() && it->first < base + bytes) {
      total_ -= it->second;
      it = ranges_.erase(it);
    }
  }

  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::uint64_t> ranges_;  // base -> bytes
  std::uint64_t total_ = 0;
};

// Saving and restoring the allocations Allocations holds. Calls run inside a
// DispatchScope (the copies are pasta's work), on the replayed launch's
// stream, in its context (current).
class ReplayMemory {
 public:
  explicit ReplayMemory(Driver& driver) : api_(driver) {}
  ReplayMemory(const ReplayMemory&) = delete;
  ReplayMemory& operator=(const ReplayMemory&) = delete;

  Allocations& allocations() { return allocations_; }
  const Allocations& allocations() const { return allocations_; }

  // Copies every allocation to the backup, after all work queued before
  // (on any stream) finished. Returns false, saving nothing, when the backup
  // cannot be as large as the allocations (why() says so); throws
  // std::runtime_error when the driver refuses a copy.
  bool save(CUstream stream) {
    saved_ = allocations_.ranges();
    std::uint64_t need = 0;
    for (const auto& r : saved_) need += r.bytes;
    api_.call(api_.ctx_synchronize(), "waiting for the program's work before saving its memory");
    if (!reserve(need)) return false;
    std::uint64_t at = 0;
    for (const auto& r : saved_) {
      api_.call(api_.copy(backup_ + at, r.base, r.bytes, stream), "saving device memory");
      at += r.bytes;
    }
    bytes_ = need;
    return true;
  }
  // Copies the backup back over the allocations saved.
  void restore(CUstream stream) {
    std::uint64_t at = 0;
    for (const auto& r : saved_) {
      api_.call(api_.copy(r.base, backup_ + at, r.bytes, stream), "restoring device memory");
      at += r.bytes;
    }
  }
  // Bytes the last save() copied, and in how many allocations.
  std::uint64_t saved_bytes() const { return bytes_; }
  std::size_t saved_allocations() const { return saved_.size(); }
  const std::string& why() const { return why_; }

  // Frees the backup, in `ctx`, if it still exists. Not from a callback.
  void release(CUcontext ctx) {
    if (!backup_ || !ctx) return;
    api_.in_context(ctx, [&] { api_.mem_free(backup_); });
    backup_ = 0;
    capacity_ = 0;
  }

 private:
  // A backup of at least `need` bytes, with room to grow by a quarter.
  bool reserve(std::uint64_t need) {
    if (need <= capacity_) return true;
    if (backup_) {
      api_.mem_free(backup_);
      backup_ = 0;
      capacity_ = 0;
    }
    std::size_t free = 0, total = 0;
    api_.call(api_.mem_info(&free, &total), "reading free device memory");
    const std::uint64_t want = need + need / 4;
    for (std::uint64_t bytes : {want, need}) {
      if (bytes > free) continue;
      if (api_.mem_alloc(&backup_, bytes) == CUDA_SUCCESS) {
        capacity_ = bytes;
        return true;
      }
      backup_ = 0;
    }
    why_ = fmt::format(
        "saving the program's device memory for a replay needs {:.2f} GiB and {:.2f} GiB are "
        "free",
        static_cast<double>(need) / (1ull << 30), static_cast<double>(free) / (1ull << 30));
    return false;
  }

  Driver& api_;
  Allocations allocations_;
  std::vector<Allocations::Range> saved_;
  CUdeviceptr backup_ = 0;
  std::uint64_t capacity_ = 0, bytes_ = 0;
  std::string why_;
};

}  // namespace pasta::nv::detail
