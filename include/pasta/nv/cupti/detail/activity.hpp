// CUPTI activity records -> pasta events. Pure functions of the record, so
// CPU tests can feed them hand-built records.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <cstdint>
#include <vector>

#include <pasta/core/events.hpp>
#include <pasta/nv/detail/cupti_api.hpp>

namespace pasta::nv::detail {

// Activity correlation id -> operator id. The threads that call CUDA write
// it (the callback of each launch, copy and memset call, with the calling
// thread's operator) and pasta's worker reads it when the device record of
// that call arrives, so entries are atomics: an id is stored after its
// operator, and a reader that sees the id sees the operator. Direct-mapped
// and bounded: an entry is overwritten 2^16 correlation ids later, long
// after its device record has been processed. Off (and empty) until enable().
class OpCorrelations {
 public:
  static constexpr std::size_t slots = std::size_t{1} << 16;

  void enable() {
    if (!table_) table_ = std::make_unique<Entry[]>(slots);
  }
  void add(std::uint32_t correlation, std::uint64_t op) {
    if (!table_) return;
    Entry& e = table_[correlation & (slots - 1)];
    e.op.store(op, std::memory_order_relaxed);
    e.correlation.store(correlation, std::memory_order_release);
  }
  std::uint64_t find(std::uint32_t correlation) const {
    if (!table_) return 0;
    const Entry& e = table_[correlation & (slots - 1)];
    return e.correlation.load(std::memory_order_acquire) == correlation
               ? e.op.load(std::memory_order_relaxed)
               : 0;
  }

 private:
  struct Entry {
    std::atomic<std::uint32_t> correlation{0};
    std::atomic<std::uint64_t> op{0};
  };
  std::unique_ptr<Entry[]> table_;
};

inline Dim3 dim3_of(std::int32_t x, std::int32_t y, std::int32_t z) {
  return {static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y),
          static_cast<std::uint32_t>(z)};
}

inline KernelComplete kernel_complete(const CUpti_ActivityKernel10& k, NameId name) {
  return {
      .correlation = k.correlationId,
      .context = k.contextId,
      .stream = k.streamId,
      .device = k.deviceId,
      .name = name,
      .grid = dim3_of(k.gridX, k.gridY, k.gridZ),
      .block = dim3_of(k.blockX, k.blockY, k.blockZ),
      .shared_mem_bytes = static_cast<std::uint32_t>(k.staticSharedMemory + k.dynamicSharedMemory),
      .start_ns = k.start,
      .end_ns = k.end};
}

// The launch as the device record tells it, for pipelines that take no host
// callbacks: no host thread, and the device start time as its time.
inline KernelLaunch kernel_launch(const CUpti_ActivityKernel10& k, NameId name) {
  return {
      .correlation = k.correlationId,
      .context = k.contextId,
      .stream = k.streamId,
      .device = k.deviceId,
      .name = name,
      .grid = dim3_of(k.gridX, k.gridY, k.gridZ),
      .block = dim3_of(k.blockX, k.blockY, k.blockZ),
      .shared_mem_bytes = static_cast<std::uint32_t>(k.staticSharedMemory + k.dynamicSharedMemory),
      .thread = 0,
      .time_ns = k.start};
}

inline CopyKind copy_kind(std::uint8_t cupti_kind) {
  switch (cupti_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return CopyKind::h2d;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return CopyKind::d2h;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return CopyKind::d2d;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return CopyKind::h2h;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return CopyKind::peer;
    default:
      return CopyKind::unknown;
  }
}

inline Memcpy memcpy_of(const CUpti_ActivityMemcpy6& m) {
  return {.correlation = m.correlationId,
          .context = m.contextId,
          .stream = m.streamId,
          .device = m.deviceId,
          .copy_kind = copy_kind(m.copyKind),
          .bytes = m.bytes,
          .start_ns = m.start,
          .end_ns = m.end};
}

inline Memcpy memcpy_of(const CUpti_ActivityMemcpyPtoP4& m) {
  return {.correlation = m.correlationId,
          .context = m.contextId,
          .stream = m.streamId,
          .device = m.deviceId,
          .copy_kind = CopyKind::peer,
          .bytes = m.bytes,
          .start_ns = m.start,
          .end_ns = m.end};
}

inline Memset memset_of(const CUpti_ActivityMemset4& m) {
  return {.correlation = m.correlationId,
          .context = m.contextId,
          .stream = m.streamId,
          .device = m.deviceId,
          .value = m.value,
          .address = 0,  // CUPTI's memset record carries no address
          .bytes = m.bytes,
          .start_ns = m.start,
          .end_ns = m.end};
}

inline MemKind mem_kind(CUpti_ActivityMemoryKind k, bool pool) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return pool ? MemKind::pool : MemKind::device;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return MemKind::managed;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return MemKind::pinned_host;
    default:
      return MemKind::unknown;
  }
}

inline bool is_allocation(const CUpti_ActivityMemory4& m) {
  return m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
}

inline MemAlloc mem_alloc(const CUpti_ActivityMemory4& m) {
  return {.address = m.address,
          .bytes = m.bytes,
          .device = m.deviceId,
          .mem_kind = mem_kind(m.memoryKind, m.isAsync != 0),
          .stream = m.streamId,
          .time_ns = m.timestamp};
}

inline MemFree mem_free(const CUpti_ActivityMemory4& m) {
  return {.address = m.address,
          .bytes = m.bytes,
          .device = m.deviceId,
          .mem_kind = mem_kind(m.memoryKind, m.isAsync != 0),
          .stream = m.streamId,
          .time_ns = m.timestamp};
}

inline SyncKind sync_kind(CUpti_ActivitySynchronizationType t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return SyncKind::event;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return SyncKind::stream;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return SyncKind::context;
    default:
      return SyncKind::unknown;
  }
}

inline Synchronize synchronize_of(const CUpti_ActivitySynchronization2& s, std::uint32_t device) {
  return {.sync_kind = sync_kind(s.type),
          .device = device,
          .context = s.contextId,
          .stream = s.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s.streamId,
          .thread = 0,
          .start_ns = s.start,
          .end_ns = s.end};
}

inline DeviceInfo device_info(const CUpti_ActivityDevice5& d, NameId name) {
  return {.device = d.id,
          .name = name,
          .cc_major = d.computeCapabilityMajor,
          .cc_minor = d.computeCapabilityMinor,
          .sm_count = d.numMultiprocessors,
          .global_mem_bytes = d.globalMemorySize};
}

}  // namespace pasta::nv::detail
