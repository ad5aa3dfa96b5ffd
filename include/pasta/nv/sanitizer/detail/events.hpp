// Compute Sanitizer callback data -> pasta events, for nv::Sanitizer: copies,
// memsets, synchronisations and the kind of an allocation, stamped with the
// host clock when the callback comes.
#pragma once

#include <sanitizer.h>

#include <algorithm>
#include <cstdint>

#include <pasta/core/detail/thread.hpp>
#include <pasta/core/events.hpp>

namespace pasta::nv::detail {

inline Memcpy memcpy_event(const Sanitizer_MemcpyData& m) {
  CopyKind kind = CopyKind::unknown;
  switch (m.direction) {
    case SANITIZER_MEMCPY_DIRECTION_HOST_TO_DEVICE:
      kind = CopyKind::h2d;
      break;
    case SANITIZER_MEMCPY_DIRECTION_DEVICE_TO_HOST:
      kind = CopyKind::d2h;
      break;
    case SANITIZER_MEMCPY_DIRECTION_DEVICE_TO_DEVICE:
      kind = m.srcContext != m.dstContext ? CopyKind::peer : CopyKind::d2d;
      break;
    case SANITIZER_MEMCPY_DIRECTION_HOST_TO_HOST:
      kind = CopyKind::h2h;
      break;
    default:
      break;
  }
  const std::uint64_t bytes =
      m.width ? m.width * std::max<std::uint64_t>(m.height, 1) * std::max<std::uint64_t>(m.depth, 1)
              : m.size;
  return Memcpy{.context = reinterpret_cast<std::uint64_t>(m.apiContext),
                .stream = reinterpret_cast<std::uint64_t>(m.apiStream),
                .copy_kind = kind,
                .bytes = bytes ? bytes : m.size,
                .start_ns = pasta::detail::now_ns()};
}

inline Memset memset_event(const Sanitizer_MemsetData& m) {
  return Memset{.context = reinterpret_cast<std::uint64_t>(m.context),
                .stream = reinterpret_cast<std::uint64_t>(m.stream),
                .value = m.value,
                .address = m.address,
                .bytes = m.width * std::max<std::uint64_t>(m.height, 1) *
                         std::max<std::uint32_t>(m.elementSize, 1),
                .start_ns = pasta::detail::now_ns()};
}

inline Synchronize synchronize_event(Sanitizer_CallbackId cbid,
                                     const Sanitizer_SynchronizeData& s) {
  const auto t = pasta::detail::now_ns();
  return Synchronize{.sync_kind = cbid == SANITIZER_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED
                                      ? SyncKind::stream
                                      : SyncKind::context,
                     .context = reinterpret_cast<std::uint64_t>(s.context),
                     .stream = reinterpret_cast<std::uint64_t>(s.stream),
                     .thread = pasta::detail::thread_id(),
                     .start_ns = t,
                     .end_ns = t};
}

// What memory an allocation callback allocated.
inline MemKind alloc_kind(Sanitizer_CallbackId cbid, const Sanitizer_ResourceMemoryData& m) {
  MemKind kind = MemKind::device;
  if (m.flags & SANITIZER_MEMORY_FLAG_MANAGED)
    kind = MemKind::managed;
  else if (cbid == SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC ||
           (m.flags & (SANITIZER_MEMORY_FLAG_HOST_PINNED | SANITIZER_MEMORY_FLAG_HOST_MAPPED)))
    kind = MemKind::pinned_host;
  else if (cbid == SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC)
    kind = MemKind::pool;
  return kind;
}

}  // namespace pasta::nv::detail
