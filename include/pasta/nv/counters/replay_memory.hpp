// The program's device memory, saved before a launch pasta replays itself
// and restored before every pass and once more at the end, so each pass
// starts from what the program had at that launch and the program's own
// work then runs on what it had.
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

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>
#include <pasta/nv/counters/l2_flush.hpp>
#include <pasta/nv/counters/span_copy.hpp>
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

// A `__device__` variable: its address range, and the driver allocation that
// holds it (cuMemGetAddressRange; 0 where the driver does not say).
struct Variable {
  std::uint64_t base = 0, bytes = 0, region = 0;
  friend bool operator==(const Variable&, const Variable&) = default;
};

// The `__device__` variables of replayed kernels (module_variables.hpp), as
// address spans: a variable that overlaps a span or lies within `near` bytes
// of one, in the same driver allocation, joins it. A module's variables lie
// packed in its global sections (with a few bytes of alignment between
// them), so a section is copied once rather than each variable; two modules'
// sections may lie closer than `near` in allocations of their own, and one
// copy over both the driver refuses (CUDA_ERROR_INVALID_VALUE, a transformers
// GPT-2 step on the H200). On a torchvision ResNet-18 step, 891 variables
// (most of them cuDNN's) copied one by one made saving and restoring 19
// times as slow as the program's 49 allocations alone; as spans, a quarter
// less: most of them lie apart (docs/internals-counters.md). The bytes
// between two variables of a span are module memory, copied back to what
// they held at the launch as the variables are. Safe from any thread.
class VariableSpans {
 public:
  static constexpr std::uint64_t near = 64;

  void add(std::uint64_t base, std::uint64_t bytes, std::uint64_t region = 0) {
    if (!bytes) return;
    std::lock_guard lock(mutex_);
    std::uint64_t lo = base, hi = base + bytes;
    auto it = spans_.upper_bound({region, lo});
    if (it != spans_.begin() && std::prev(it)->first.first == region &&
        std::prev(it)->second + near >= lo)
      --it;
    while (it != spans_.end() && it->first.first == region && it->first.second <= hi + near) {
      lo = std::min(lo, it->first.second);
      hi = std::max(hi, it->second);
      bytes_ -= it->second - it->first.second;
      it = spans_.erase(it);
    }
    spans_.emplace(std::pair{region, lo}, hi);
    bytes_ += hi - lo;
  }
  void add(const Variable& v) { add(v.base, v.bytes, v.region); }
  void clear() {
    std::lock_guard lock(mutex_);
    spans_.clear();
    bytes_ = 0;
  }
  std::uint64_t bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
  }
  std::size_t count() const {
    std::lock_guard lock(mutex_);
    return spans_.size();
  }
  // By allocation, then address.
  std::vector<Allocations::Range> ranges() const {
    std::lock_guard lock(mutex_);
    std::vector<Allocations::Range> out;
    out.reserve(spans_.size());
    for (const auto& [start, hi] : spans_) out.push_back({start.second, hi - start.second});
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> spans_;  // region, start -> end
  std::uint64_t bytes_ = 0;
};

// Saving and restoring the allocations Allocations holds, in numbered slots:
// a batch of launches replayed together keeps each launch's memory in a slot
// of its own (RangeCounters). Calls run inside a DispatchScope (the copies
// are pasta's work), in the measured context (current).
class ReplayMemory {
 public:
  explicit ReplayMemory(Driver& driver) : api_(driver) {}
  ReplayMemory(const ReplayMemory&) = delete;
  ReplayMemory& operator=(const ReplayMemory&) = delete;

  Allocations& allocations() { return allocations_; }
  const Allocations& allocations() const { return allocations_; }
  // `__device__` variables saved and restored with the allocations.
  VariableSpans& variables() { return variables_; }
  const VariableSpans& variables() const { return variables_; }

  // Copies every allocation and span of variables to `slot`'s backup, after
  // all work queued before (on any stream) finished; the slot's earlier save
  // is gone. Returns false, saving nothing, when the backup cannot be as
  // large as the allocations (why() says so); throws std::runtime_error when
  // the driver refuses a copy. Slot 0 may take all the free memory; every
  // other slot at most half of it, so a batch leaves the program room to grow.
  bool save(CUstream stream, std::size_t slot = 0) {
    Slot& s = slot_at(slot);
    std::vector<Allocations::Range> ranges = allocations_.ranges();
    const std::vector<Allocations::Range> spans = variables_.ranges();
    ranges.insert(ranges.end(), spans.begin(), spans.end());
    std::uint64_t rows = 0;  // a row per row_bytes of a span (the last one shorter)
    for (const auto& r : spans) rows += (r.bytes + row_bytes - 1) / row_bytes;
    const Layout layout = lay_out(ranges, spans.size(), rows);
    api_.call(api_.ctx_synchronize(), "waiting for the program's work before saving its memory");
    if (!reserve(s, layout.need, slot == 0)) return false;
    s.ranges = std::move(ranges);
    s.at = layout.at;
    s.spans = spans.size();
    s.rows = rows;
    // The spans' rows at the backup's end: the restores' (backup to
    // variables), then the save's (variables to backup).
    s.table = s.spans ? s.backup + layout.table : 0;
    if (s.table) {
      std::vector<SpanCopy::Row> table;
      for (std::size_t i = s.ranges.size() - s.spans; i < s.ranges.size(); ++i)
        for (std::uint64_t at = 0; at < s.ranges[i].bytes; at += row_bytes)
          table.push_back({s.ranges[i].base + at, s.backup + s.at[i] + at,
                           std::min(row_bytes, s.ranges[i].bytes - at)});
      for (std::size_t i = 0; i < s.rows; ++i)
        table.push_back({table[i].from, table[i].to, table[i].bytes});
      api_.call(api_.copy_to_device(s.table, table.data(), table.size() * sizeof(SpanCopy::Row)),
                "saving the variables' copy table");
    }
    save_copies(s, stream);
    if (s.table) {
      copier_.copy(s.table + s.rows * sizeof(SpanCopy::Row), s.rows, stream);
      ++kernel_copies_;
    }
    s.bytes = 0;
    for (const auto& r : s.ranges) s.bytes += r.bytes;
    return true;
  }
  // Whether `slot` has room for a save of the allocations as they are now
  // (made if it can be, on save()'s terms); saves nothing.
  bool reserve(std::size_t slot) {
    // lay_out()'s need at most: each span and the rows' table aligned up,
    // the rows (a span's at most one more than its whole row_bytes); with
    // no spans, the allocations alone.
    const std::uint64_t spans = variables_.count(), variables = variables_.bytes();
    const std::uint64_t rows = spans + variables / row_bytes;
    return reserve(
        slot_at(slot),
        allocations_.bytes() + variables +
            (spans ? spans * alignment + alignment + 2 * rows * sizeof(SpanCopy::Row) : 0),
        slot == 0);
  }
  // The rows that copy a slot's variables back (SpanCopy's table).
  struct Rows {
    CUdeviceptr table = 0;
    std::uint64_t count = 0;
    explicit operator bool() const { return count > 0; }
  };
  // Copies `slot`'s backup back over the memory it saved, on `stream`: the
  // allocations one copy each, the variables by one launch of pasta's copy
  // kernel (SpanCopy). Returns whether it launched the kernel (a range of
  // its own while the range profiler runs). Given `rows`, variables that
  // the L2 flush's launch can copy (L2Flush::with_rows) are left to it:
  // their rows are put there, for the caller's next flush (or copy_rows()).
  bool restore(CUstream stream, std::size_t slot = 0, Rows* rows = nullptr) {
    const Slot& s = slots_.at(slot);
    const std::size_t allocations = s.ranges.size() - s.spans;
    for (std::size_t i = 0; i < allocations; ++i)
      api_.call(api_.copy(s.ranges[i].base, s.backup + s.at[i], s.ranges[i].bytes, stream),
                "restoring device memory");
    if (!s.table) return false;
    ++kernel_copies_;
    if (rows && L2Flush::with_rows(s.rows)) {
      *rows = {.table = s.table, .count = s.rows};
      ++with_flush_;
      return false;
    }
    copier_.copy(s.table, s.rows, stream);
    return true;
  }
  // Copies rows restore() left to a flush that did not come, by the copy
  // kernel's own launch.
  void copy_rows(const Rows& rows, CUstream stream) {
    if (!rows) return;
    copier_.copy(rows.table, rows.count, stream);
    --with_flush_;
  }
  // Saves whose allocations went in one batched call (cuMemcpyBatchAsync),
  // saves and restores whose variables pasta's copy kernel copied, and of
  // those, restores whose copy went in an L2 flush's launch.
  std::uint64_t batched() const { return batched_; }
  std::uint64_t kernel_copies() const { return kernel_copies_; }
  std::uint64_t copies_with_flush() const { return with_flush_; }
  // Bytes `slot`'s last save copied, and in how many copies (allocations and
  // spans of variables).
  std::uint64_t saved_bytes(std::size_t slot = 0) const {
    return slot < slots_.size() ? slots_[slot].bytes : 0;
  }
  std::size_t saved_allocations(std::size_t slot = 0) const {
    return slot < slots_.size() ? slots_[slot].ranges.size() : 0;
  }
  const std::string& why() const { return why_; }

  // Frees the backups, in `ctx`, if they still exist. Not from a callback.
  void release(CUcontext ctx) {
    if (!ctx) return;
    for (Slot& s : slots_) {
      if (!s.backup) continue;
      api_.in_context(ctx, [&] { api_.mem_free(s.backup); });
      s.backup = 0;
      s.capacity = 0;
      s.table = 0;
    }
    copier_.release(ctx);
  }

 private:
  struct Slot {
    std::vector<Allocations::Range> ranges;  // what the last save copied: allocations, then spans
    std::vector<std::uint64_t> at;           // where in the backup each range is
    std::size_t spans = 0;                   // the last ranges: variables
    std::uint64_t rows = 0;                  // the table's rows for a copy of the spans
    CUdeviceptr backup = 0, table = 0;       // table: the spans' rows for SpanCopy
    std::uint64_t capacity = 0, bytes = 0;
  };
  // Where a save puts its ranges in the backup: the allocations packed, then
  // each span at an `alignment` boundary (so the copy kernel moves 8-byte
  // words wherever the variable is aligned so), then the spans' rows.
  static constexpr std::uint64_t alignment = 16;
  // A span is copied in rows of at most this many bytes (a block of the
  // copy kernel each), so that a pass's restore fits in the L2 flush's launch.
  static constexpr std::uint64_t row_bytes = L2Flush::max_row_bytes;
  struct Layout {
    std::vector<std::uint64_t> at;
    std::uint64_t table = 0, need = 0;
  };
  static Layout lay_out(const std::vector<Allocations::Range>& ranges, std::size_t spans,
                        std::uint64_t rows) {
    Layout l;
    const std::size_t allocations = ranges.size() - spans;
    std::uint64_t end = 0;
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      if (i >= allocations) end = (end + alignment - 1) / alignment * alignment;
      l.at.push_back(end);
      end += ranges[i].bytes;
    }
    l.table = (end + alignment - 1) / alignment * alignment;
    l.need = spans ? l.table + 2 * rows * sizeof(SpanCopy::Row) : end;
    return l;
  }

  // A save's copies of the allocations in one batched call where the driver
  // has it (outside the replay passes: a save is never inside one), on the
  // calling thread's default stream for the NULL stream (the batch refuses
  // the legacy one; the per-thread stream is ordered with it); with the
  // spans too where no copy table was made. A driver that refuses the batch
  // gets one copy each, from then on.
  void save_copies(const Slot& s, CUstream stream) {
    const char* what = "saving device memory";
    const std::size_t n = s.table ? s.ranges.size() - s.spans : s.ranges.size();
    if (api_.copy_batch && batch_works_ && n > 1) {
      std::vector<CUdeviceptr> to, from;
      std::vector<std::size_t> sizes;
      for (std::size_t i = 0; i < n; ++i) {
        to.push_back(s.backup + s.at[i]);
        from.push_back(s.ranges[i].base);
        sizes.push_back(s.ranges[i].bytes);
      }
      CUmemcpyAttributes order{};
      order.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
      std::size_t first = 0;
      const CUresult r = api_.copy_batch(to.data(), from.data(), sizes.data(), sizes.size(), &order,
                                         &first, 1, stream ? stream : CU_STREAM_PER_THREAD);
      if (r == CUDA_SUCCESS) {
        ++batched_;
        return;
      }
      if (r != CUDA_ERROR_NOT_SUPPORTED && r != CUDA_ERROR_INVALID_VALUE) api_.call(r, what);
      batch_works_ = false;
    }
    for (std::size_t i = 0; i < n; ++i)
      if (const CUresult r = api_.copy(s.backup + s.at[i], s.ranges[i].base, s.ranges[i].bytes,
                                       stream);
          r != CUDA_SUCCESS)
        throw std::runtime_error(fmt::format(
            "{} ({} bytes at {:#x}, {}): {}", what, s.ranges[i].bytes, s.ranges[i].base,
            i < s.ranges.size() - s.spans ? "an allocation" : "`__device__` variables",
            api_.name(r)));
  }

  Slot& slot_at(std::size_t slot) {
    if (slot >= slots_.size()) slots_.resize(slot + 1);
    return slots_[slot];
  }
  // A backup of at least `need` bytes for `s`, with room to grow by a
  // quarter where that fits (the program's allocations grow through its
  // first steps: without the room a slot is freed and made again at each
  // growth, and cuMemFree waits for the device).
  bool reserve(Slot& s, std::uint64_t need, bool first) {
    if (need <= s.capacity) return true;
    if (s.backup) {
      api_.mem_free(s.backup);
      s.backup = 0;
      s.capacity = 0;
    }
    std::size_t free = 0, total = 0;
    api_.call(api_.mem_info(&free, &total), "reading free device memory");
    const std::uint64_t room = first ? free : free / 2;
    const std::uint64_t want = need + need / 4;
    for (std::uint64_t bytes : {want, need}) {
      if (bytes > room) continue;
      if (api_.mem_alloc(&s.backup, bytes) == CUDA_SUCCESS) {
        s.capacity = bytes;
        return true;
      }
      s.backup = 0;
    }
    why_ = first ? fmt::format(
                       "saving the program's device memory for a replay needs {:.2f} GiB and "
                       "{:.2f} GiB are free",
                       static_cast<double>(need) / (1ull << 30),
                       static_cast<double>(free) / (1ull << 30))
                 : fmt::format(
                       "keeping one more launch's device memory to replay it with others needs "
                       "{:.2f} GiB, more than half of the {:.2f} GiB free",
                       static_cast<double>(need) / (1ull << 30),
                       static_cast<double>(free) / (1ull << 30));
    return false;
  }

  Driver& api_;
  Allocations allocations_;
  VariableSpans variables_;
  std::vector<Slot> slots_;
  SpanCopy copier_{api_};
  bool batch_works_ = true;
  std::uint64_t batched_ = 0, kernel_copies_ = 0, with_flush_ = 0;
  std::string why_;
};

}  // namespace pasta::nv::detail
