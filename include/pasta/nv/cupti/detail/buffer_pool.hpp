// The buffers pasta hands CUPTI for its activity records, kept and reused.
//
// CUPTI asks for a buffer on the thread whose launch needs one: after every
// flush (a synchronisation, the timer) each launching thread asks anew. A
// fresh 8 MiB buffer costs that thread its page faults, and CUPTI zeroes it
// there unless told every buffer comes zeroed
// (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER). So the pool hands out
// buffers whose pages are already in and zero: pasta's worker zeroes each
// one after processing it and puts it back. A program thread allocates only
// when no spare is left, and then takes calloc's zero pages. No CUPTI here,
// so a test drives it alone.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace pasta::nv::detail {

class BufferPool {
 public:
  // bytes: each buffer's size; spares: how many zeroed buffers are kept for
  // reuse (and made at prepare()); more are freed when they come back.
  BufferPool(std::size_t bytes, std::size_t spares) : bytes_(bytes), spares_(spares) {}
  ~BufferPool() {
    for (std::uint8_t* b : free_) std::free(b);
  }
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  std::size_t bytes() const { return bytes_; }

  // On pasta's thread, before the program's launches need buffers: the
  // spares, their pages touched, so no program thread takes a page fault
  // for them.
  void prepare() {
    std::vector<std::uint8_t*> made;
    for (std::size_t i = spare_count(); i < spares_; ++i) {
      auto* b = static_cast<std::uint8_t*>(std::malloc(bytes_));
      if (!b) break;
      std::memset(b, 0, bytes_);
      made.push_back(b);
    }
    std::scoped_lock lock(mutex_);
    free_.insert(free_.end(), made.begin(), made.end());
  }

  // A zeroed buffer (nullptr if memory is out); any thread.
  std::uint8_t* take() {
    {
      std::scoped_lock lock(mutex_);
      if (!free_.empty()) {
        std::uint8_t* b = free_.back();
        free_.pop_back();
        reused_.fetch_add(1, std::memory_order_relaxed);
        return b;
      }
    }
    fresh_.fetch_add(1, std::memory_order_relaxed);
    return static_cast<std::uint8_t*>(std::calloc(1, bytes_));
  }

  // A buffer back from CUPTI, processed: zeroed here (pasta's thread) and
  // kept, or freed when the pool holds its spares already.
  void give_back(std::uint8_t* b) {
    if (!b) return;
    if (spare_count() >= spares_) {
      std::free(b);
      return;
    }
    std::memset(b, 0, bytes_);  // all of it: CUPTI may touch bytes past the valid ones
    std::scoped_lock lock(mutex_);
    free_.push_back(b);
  }

  // Buffers handed out from the spares, and freshly allocated on demand.
  std::uint64_t reused() const { return reused_.load(std::memory_order_relaxed); }
  std::uint64_t fresh() const { return fresh_.load(std::memory_order_relaxed); }

 private:
  std::size_t spare_count() {
    std::scoped_lock lock(mutex_);
    return free_.size();
  }

  const std::size_t bytes_, spares_;
  std::mutex mutex_;
  std::vector<std::uint8_t*> free_;  // zeroed; guarded by mutex_
  std::atomic<std::uint64_t> reused_{0}, fresh_{0};
};

}  // namespace pasta::nv::detail
