// CUPTI activity records, built by hand, turned into pasta events: the
// translation the CUPTI handler applies to every record, checked without a GPU.
#include <doctest/doctest.h>

#include <pasta/nv/cupti/detail/activity.hpp>

using namespace pasta;
using namespace pasta::nv::detail;

TEST_CASE("a kernel record becomes a completion (and a launch) with its grid and times") {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = 77;
  k.contextId = 1;
  k.streamId = 13;
  k.deviceId = 1;
  k.gridX = 256, k.gridY = 2, k.gridZ = 1;
  k.blockX = 128, k.blockY = 1, k.blockZ = 1;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 512;
  k.start = 1'000'000;
  k.end = 1'004'500;
  const NameId name = intern("_Z5saxpyfPKfPfi");
  const KernelComplete c = kernel_complete(k, name);
  CHECK(c.correlation == 77);
  CHECK(c.stream == 13);
  CHECK(c.device == 1);
  CHECK(c.name == name);
  CHECK(c.grid == Dim3{256, 2, 1});
  CHECK(c.block == Dim3{128, 1, 1});
  CHECK(c.shared_mem_bytes == 1536);
  CHECK(c.end_ns - c.start_ns == 4500);
  const KernelLaunch l = kernel_launch(k, name);
  CHECK(l.correlation == 77);
  CHECK(l.thread == 0);  // no host thread without callbacks
  CHECK(l.time_ns == 1'000'000);
}

TEST_CASE("memcpy records map CUPTI's copy kinds onto pasta's") {
  CUpti_ActivityMemcpy6 m{};
  m.correlationId = 5;
  m.bytes = 4096;
  m.start = 10;
  m.end = 30;
  const std::pair<std::uint8_t, CopyKind> kinds[] = {
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CopyKind::h2d},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CopyKind::d2h},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CopyKind::d2d},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CopyKind::h2h},
      {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CopyKind::peer},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, CopyKind::d2d},
      {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, CopyKind::unknown}};
  for (auto [cupti, pasta_kind] : kinds) {
    m.copyKind = cupti;
    CHECK(memcpy_of(m).copy_kind == pasta_kind);
  }
  CHECK(memcpy_of(m).bytes == 4096);
  CUpti_ActivityMemcpyPtoP4 p{};
  p.bytes = 8;
  CHECK(memcpy_of(p).copy_kind == CopyKind::peer);
}

TEST_CASE("memory records become allocations and frees of the right kind") {
  CUpti_ActivityMemory4 m{};
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
  m.address = 0x7f0000000000;
  m.bytes = 1 << 20;
  m.deviceId = 0;
  m.timestamp = 99;
  CHECK(is_allocation(m));
  const MemAlloc a = mem_alloc(m);
  CHECK(a.address == 0x7f0000000000);
  CHECK(a.bytes == 1u << 20);
  CHECK(a.mem_kind == MemKind::managed);
  CHECK(a.time_ns == 99);
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.isAsync = 1;
  CHECK(mem_alloc(m).mem_kind == MemKind::pool);
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  CHECK(mem_alloc(m).mem_kind == MemKind::pinned_host);
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  CHECK_FALSE(is_allocation(m));
  CHECK(mem_free(m).address == 0x7f0000000000);
}

TEST_CASE("synchronisation records keep their kind, an absent stream is 0") {
  CUpti_ActivitySynchronization2 s{};
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  s.streamId = 7;
  s.start = 100;
  s.end = 250;
  const Synchronize y = synchronize_of(s, 3);
  CHECK(y.sync_kind == SyncKind::stream);
  CHECK(y.device == 3);
  CHECK(y.stream == 7);
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  s.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  CHECK(synchronize_of(s, 0).sync_kind == SyncKind::context);
  CHECK(synchronize_of(s, 0).stream == 0);
}

TEST_CASE("a device record names the GPU and its size") {
  CUpti_ActivityDevice5 d{};
  d.id = 1;
  d.computeCapabilityMajor = 9;
  d.computeCapabilityMinor = 0;
  d.numMultiprocessors = 132;
  d.globalMemorySize = 85ull << 30;
  const DeviceInfo info = device_info(d, intern("NVIDIA H100 80GB HBM3"));
  CHECK(info.device == 1);
  CHECK(info.cc_major == 9);
  CHECK(info.sm_count == 132);
  CHECK(info.global_mem_bytes == 85ull << 30);
  CHECK(name_of(info.name) == "NVIDIA H100 80GB HBM3");
}

TEST_CASE("memset records carry bytes and value") {
  CUpti_ActivityMemset4 m{};
  m.bytes = 64;
  m.value = 0xab;
  m.start = 1;
  m.end = 2;
  const Memset s = memset_of(m);
  CHECK(s.bytes == 64);
  CHECK(s.value == 0xab);
}

TEST_CASE("launch callbacks tag activities with their operator, boundedly") {
  OpCorrelations ops;
  ops.add(7, 1001);
  CHECK(ops.find(7) == 0);  // off until enabled: nothing recorded
  ops.enable();
  CHECK(ops.find(7) == 0);  // nothing recorded yet
  ops.add(7, 1001);
  ops.add(8, 1002);
  CHECK(ops.find(7) == 1001);
  CHECK(ops.find(8) == 1002);
  CHECK(ops.find(9) == 0);
  // The slot of 7 is reused 2^16 correlation ids later: 7 is forgotten, not
  // confused with the newcomer.
  ops.add(7 + OpCorrelations::slots, 2001);
  CHECK(ops.find(7) == 0);
  CHECK(ops.find(7 + OpCorrelations::slots) == 2001);
  CHECK(ops.find(8) == 1002);
}
