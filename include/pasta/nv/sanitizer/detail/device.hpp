// The device side of nv::Sanitizer for one CUDA context: the patch image
// added once, the post-pass module, and the buffers the patches write
// (lookup table, page counters, trace records), all allocated with the
// Sanitizer API so the program never sees them.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/nv/sanitizer/detail/access_layout.hpp>
#include <pasta/nv/detail/driver.hpp>
#include <pasta/nv/sanitizer/detail/api.hpp>
#include <pasta/nv/generated/access_kernels.hpp>

namespace pasta::nv::detail {

// What nv::Sanitizer counts (nv::Sanitizer::Stats).
struct SanitizerStats {
  std::atomic<std::uint64_t> launches{0}, instrumented{0}, modules_patched{0}, modules_skipped{0};
  std::atomic<std::uint64_t> patch_ns{0}, post_ns{0}, copy_bytes{0};
  std::atomic<std::uint64_t> records{0}, records_lost{0}, overflowed_launches{0};
  std::atomic<std::uint64_t> bins{0}, graph_kernels{0};
  // Per-instruction counts: copied to the host, of them from overflow
  // records; lost past the overflow records' capacity (launches with any);
  // table growths; launches left uninstrumented because their function is
  // past what a key holds; the largest region count of a launch; regions
  // under more strided views than a key tells apart.
  std::atomic<std::uint64_t> pc_counts{0}, pc_overflow{0}, pc_lost{0}, pc_lost_launches{0};
  std::atomic<std::uint64_t> pc_table_growths{0}, pc_too_large{0}, pc_regions{0};
  std::atomic<std::uint64_t> pc_overfull_regions{0};
};

// What the patches collect: nothing, per-page counters reduced on the
// device, per-instruction counts reduced on the device, or every access as
// a record (nv::Sanitizer::Mode).
enum class AccessMode : std::uint8_t { none, histogram, pcs, trace };

// pasta's own CUDA work (post-pass, module load) on this thread: its
// callbacks are ignored.
inline int& own_work() {
  thread_local int depth = 0;
  return depth;
}
struct OwnWork {
  OwnWork() { ++own_work(); }
  ~OwnWork() { --own_work(); }
};

inline std::string sanitizer_error(SanitizerResult r) {
  const char* s = nullptr;
  sanitizer_api().sanitizerGetResultString(r, &s);
  return fmt::format("{} ({})", s ? s : "unknown error", static_cast<int>(r));
}

inline std::string driver_error(CUresult r) {
  const char* s = nullptr;
  loaded_driver().error_string(r, &s);
  return fmt::format("{} ({})", s ? s : "unknown error", static_cast<int>(r));
}

// Thrown by the device side; the handler turns it into one log line and
// stops instrumenting, the program runs on.
struct DeviceError {
  std::string what;
};

inline void check(SanitizerResult r, std::string_view what) {
  if (r != SANITIZER_SUCCESS) throw DeviceError{fmt::format("{}: {}", what, sanitizer_error(r))};
}
inline void check(CUresult r, std::string_view what) {
  if (r != CUDA_SUCCESS) throw DeviceError{fmt::format("{}: {}", what, driver_error(r))};
}

// Where a DeviceBuffer lives: device memory, or pinned host memory that the
// device writes and the host reads in place (no copy call).
enum class Memory { device, pinned_host };

// A buffer from sanitizerAlloc (or sanitizerAllocHost) that grows (contents
// dropped) on demand.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(Memory memory = Memory::device) : memory_(memory) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // At least `bytes`; true if it was (re)allocated.
  bool reserve(CUcontext ctx, std::size_t bytes, std::string_view what) {
    if (bytes <= bytes_ && ptr_) return false;
    release();
    const std::size_t want = std::max<std::size_t>(bytes, 256);
    const bool host = memory_ == Memory::pinned_host;
    const SanitizerApi& api = sanitizer_api();
    check(host ? api.sanitizerAllocHost(ctx, &ptr_, want) : api.sanitizerAlloc(ctx, &ptr_, want),
          fmt::format("allocating {} bytes of {} memory for {}", want,
                      host ? "pinned host" : "device", what));
    ctx_ = ctx;
    bytes_ = want;
    return true;
  }
  void release() {
    if (ptr_) {
      const SanitizerApi& api = sanitizer_api();
      memory_ == Memory::pinned_host ? api.sanitizerFreeHost(ctx_, ptr_)
                                     : api.sanitizerFree(ctx_, ptr_);
    }
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <class T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  Memory memory_;
  CUcontext ctx_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

struct ContextState {
  CUcontext ctx = nullptr;
  bool patches_added = false;
  CUmodule post_module = nullptr;
  CUfunction compact = nullptr, publish = nullptr, compact_pcs = nullptr;
  DeviceBuffer params, ranges, slots, counters, records;
  // Per-instruction counts: the launch's regions, the hash table and its
  // overflow records, and their slot counts (the table's a power of two).
  DeviceBuffer regions, pc_table, pc_overflow;
  std::uint64_t pc_slots = 0, pc_overflow_slots = 0;
  std::vector<std::byte> region_bytes;  // what `regions` holds
  // Written by the post-pass, read by the host in place.
  DeviceBuffer bins{Memory::pinned_host}, host_count{Memory::pinned_host};
  DeviceBuffer pc_out{Memory::pinned_host};
  std::uint64_t table_version = ~0ull;          // of the table the device holds
  std::uint64_t slot_count = 0;                 // in use, catch-all slots included
  std::vector<device::AllocRange> host_ranges;  // the table the device holds

  ~ContextState() {
    for (DeviceBuffer* b : {&params, &ranges, &slots, &bins, &host_count, &counters, &records,
                            &regions, &pc_table, &pc_overflow, &pc_out})
      b->release();
    // The post-pass module goes with the context.
  }
};

// f(driver) inside `ctx`, as pasta's own work (its callbacks ignored); the
// context is left on every way out.
template <class F>
void in_context(CUcontext ctx, std::string_view entering, F&& f) {
  OwnWork own;
  const Driver& driver = loaded_driver();
  CUcontext previous = nullptr;
  check(driver.push(ctx), entering);
  try {
    f(driver);
  } catch (...) {
    driver.pop(&previous);
    throw;
  }
  driver.pop(&previous);
}

// The post-pass kernel, loaded into the launch's context on first use.
inline void load_post_pass(ContextState& c) {
  if (c.compact) return;
  const Driver& driver = loaded_driver();
  check(driver.module_load_data(&c.post_module, generated::compact_kernel),
        "loading pasta's post-pass kernel");
  check(driver.module_function(&c.compact, c.post_module, "pasta_compact_slots"),
        "finding pasta_compact_slots");
  check(driver.module_function(&c.publish, c.post_module, "pasta_publish_count"),
        "finding pasta_publish_count");
  check(driver.module_function(&c.compact_pcs, c.post_module, "pasta_compact_pcs"),
        "finding pasta_compact_pcs");
}

}  // namespace pasta::nv::detail
