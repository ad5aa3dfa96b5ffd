// Compute Sanitizer callback data -> pasta events (nv/sanitizer/detail/events.hpp),
// on callback structs filled in by hand.
#include <doctest/doctest.h>

#include <pasta/nv/sanitizer/detail/events.hpp>

using namespace pasta;
using namespace pasta::nv::detail;

TEST_CASE("a Sanitizer copy: its direction, a peer copy across contexts, 2D and 3D bytes") {
  Sanitizer_MemcpyData m{};
  m.direction = SANITIZER_MEMCPY_DIRECTION_HOST_TO_DEVICE;
  m.size = 4096;
  CHECK(memcpy_event(m).copy_kind == CopyKind::h2d);
  CHECK(memcpy_event(m).bytes == 4096);
  m.direction = SANITIZER_MEMCPY_DIRECTION_DEVICE_TO_DEVICE;
  CHECK(memcpy_event(m).copy_kind == CopyKind::d2d);
  m.dstContext = reinterpret_cast<CUcontext>(0x10);
  CHECK(memcpy_event(m).copy_kind == CopyKind::peer);
  m.width = 256;
  m.height = 4;
  CHECK(memcpy_event(m).bytes == 1024);  // 2D: width x height (depth 0 counts as 1)
  m.depth = 3;
  CHECK(memcpy_event(m).bytes == 3072);
}

TEST_CASE("a Sanitizer memset: width x height x element size") {
  Sanitizer_MemsetData m{};
  m.address = 0x1000;
  m.width = 100;
  m.elementSize = 4;
  m.value = 7;
  const Memset e = memset_event(m);
  CHECK(e.address == 0x1000);
  CHECK(e.bytes == 400);
  CHECK(e.value == 7);
  m.height = 2;
  CHECK(memset_event(m).bytes == 800);
}

TEST_CASE("an allocation's kind: managed first, then pinned host, then a pool's, else device") {
  Sanitizer_ResourceMemoryData m{};
  CHECK(alloc_kind(SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC, m) == MemKind::device);
  CHECK(alloc_kind(SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC, m) == MemKind::pool);
  CHECK(alloc_kind(SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC, m) == MemKind::pinned_host);
  m.flags = SANITIZER_MEMORY_FLAG_HOST_PINNED;
  CHECK(alloc_kind(SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC, m) == MemKind::pinned_host);
  m.flags = SANITIZER_MEMORY_FLAG_MANAGED;
  CHECK(alloc_kind(SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC, m) == MemKind::managed);
}

TEST_CASE("a Sanitizer synchronisation: a stream's or a context's, at one instant") {
  Sanitizer_SynchronizeData s{};
  const Synchronize stream = synchronize_event(SANITIZER_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED, s);
  CHECK(stream.sync_kind == SyncKind::stream);
  CHECK(stream.start_ns == stream.end_ns);
  CHECK(synchronize_event(SANITIZER_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED, s).sync_kind ==
        SyncKind::context);
}
