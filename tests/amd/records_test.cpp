// rocprofiler-sdk records, built by hand, turned into pasta events: the
// translation amd::Rocprofiler applies, checked without ROCm. The structs
// below copy the field names and types of rocprofiler-sdk's (ROCm 6.2+);
// where rocprofiler-sdk is installed, rocprofiler_records_test.cpp runs the
// same translation on its real structs.
#include <doctest/doctest.h>

#include <cstdint>

#include <pasta/amd/detail/records.hpp>

using namespace pasta;
using namespace pasta::amd::detail;

namespace {

struct Handle {
  std::uint64_t handle = 0;
};
struct Dim {
  std::uint32_t x = 1, y = 1, z = 1;
};
union UserData {
  std::uint64_t value;
  void* ptr;
};
struct Correlation {
  std::uint64_t internal = 0;
  UserData external{0};
};
struct DispatchInfo {  // rocprofiler_kernel_dispatch_info_t
  std::uint64_t size = sizeof(DispatchInfo);
  Handle agent_id, queue_id;
  std::uint64_t kernel_id = 0, dispatch_id = 0;
  std::uint32_t private_segment_size = 0, group_segment_size = 0;
  Dim workgroup_size, grid_size;
};
struct DispatchRecord {  // rocprofiler_buffer_tracing_kernel_dispatch_record_t
  std::uint64_t size = sizeof(DispatchRecord);
  int kind = 0, operation = 0;
  Correlation correlation_id;
  std::uint64_t thread_id = 0, start_timestamp = 0, end_timestamp = 0;
  DispatchInfo dispatch_info;
};
struct CopyRecord {  // rocprofiler_buffer_tracing_memory_copy_record_t
  std::uint64_t size = sizeof(CopyRecord);
  int kind = 0, operation = 0;
  Correlation correlation_id;
  std::uint64_t thread_id = 0, start_timestamp = 0, end_timestamp = 0;
  Handle dst_agent_id, src_agent_id;
  std::uint64_t bytes = 0;
};
struct Agent {  // the rocprofiler_agent_v0_t fields the handler reads
  Handle id;
  std::uint32_t cu_count = 0, gfx_target_version = 0;
  std::int32_t logical_node_type_id = 0;
};
struct LoadData {  // rocprofiler_callback_tracing_code_object_load_data_t
  std::uint64_t code_object_id = 0, load_base = 0, load_size = 0;
  std::uint64_t memory_base = 0, memory_size = 0;
};
using Stream = struct StreamOpaque*;  // hipStream_t
union HipArgs {                       // rocprofiler_hip_api_args_t, the members read
  struct {
    void** ptr;
    std::size_t size;
  } hipMalloc;
  struct {
    void** dev_ptr;
    std::size_t size;
    unsigned flags;
  } hipMallocManaged;
  struct {
    void** ptr;
    std::size_t size;
    unsigned flags;
  } hipHostMalloc;
  struct {
    void** ptr;
    std::size_t sizeBytes;
    unsigned flags;
  } hipExtMallocWithFlags;
  struct {
    void** dev_ptr;
    std::size_t size;
    Stream stream;
  } hipMallocAsync;
  struct {
    void** dev_ptr;
    std::size_t size;
    void* mem_pool;
    Stream stream;
  } hipMallocFromPoolAsync;
  struct {
    void* ptr;
  } hipFree;
  struct {
    void* ptr;
  } hipHostFree;
  struct {
    void* dev_ptr;
    Stream stream;
  } hipFreeAsync;
  struct {
    void* dst;
    int value;
    std::size_t sizeBytes;
  } hipMemset;
  struct {
    void* dst;
    int value;
    std::size_t sizeBytes;
    Stream stream;
  } hipMemsetAsync;
  struct {
    Stream stream;
  } hipStreamSynchronize;
};

void* fake(std::uintptr_t a) { return reinterpret_cast<void*>(a); }
Stream fake_stream(std::uintptr_t a) { return reinterpret_cast<Stream>(a); }

}  // namespace

TEST_CASE("grids in work-items become grids in blocks, partial blocks included") {
  CHECK(blocks_of(Dim{1024, 1, 1}, Dim{256, 1, 1}) == Dim3{4, 1, 1});
  CHECK(blocks_of(Dim{1000, 30, 2}, Dim{256, 8, 1}) == Dim3{4, 4, 2});
  CHECK(blocks_of(Dim{5, 1, 1}, Dim{0, 1, 1}) == Dim3{5, 1, 1});  // no workgroup: left as is
}

TEST_CASE("kernel symbols lose the descriptor suffix") {
  CHECK(kernel_name_of("_Z7vec_addPKfS0_Pfi.kd") == "_Z7vec_addPKfS0_Pfi");
  CHECK(kernel_name_of("plain") == "plain");
  CHECK(kernel_name_of(nullptr).empty());
  KernelNames names;
  names.add(7, "_Z5scalePfi.kd");
  CHECK(name_of(names.find(7)) == "_Z5scalePfi");
  CHECK(names.find(8) == KernelNames::unknown());
}

TEST_CASE("agents number GPUs as HIP does, other agents are device 0") {
  Agents agents;
  agents.add(Agent{.id = {0x100}, .logical_node_type_id = 0}, false);  // a CPU
  agents.add(Agent{.id = {0x200}, .logical_node_type_id = 0}, true);
  agents.add(Agent{.id = {0x300}, .logical_node_type_id = 1}, true);
  CHECK(agents.device(0x300) == 1);
  CHECK(agents.device(0x200) == 0);
  CHECK(agents.device(0x100) == 0);
  CHECK_FALSE(agents.is_gpu(0x100));
  CHECK(agents.is_gpu(0x300));
  const DeviceInfo d = device_info(
      Agent{.id = {0x300}, .cu_count = 110, .gfx_target_version = 90010, .logical_node_type_id = 1},
      intern("AMD Instinct MI210"), 64ull << 30);
  CHECK(d.device == 1);
  CHECK(d.cc_major == 9);
  CHECK(d.cc_minor == 10);  // gfx90a: minor 0, stepping 10 ("a")
  CHECK(d.sm_count == 110);
  CHECK(d.global_mem_bytes == 64ull << 30);
}

TEST_CASE("a dispatch becomes a launch and a completion with one correlation") {
  DispatchRecord r;
  r.correlation_id = {.internal = 41, .external = {.value = 9}};
  r.start_timestamp = 5'000;
  r.end_timestamp = 7'500;
  r.dispatch_info.agent_id = {0x300};
  r.dispatch_info.queue_id = {0xabc};
  r.dispatch_info.kernel_id = 7;
  r.dispatch_info.dispatch_id = 1234;
  r.dispatch_info.group_segment_size = 4096;
  r.dispatch_info.workgroup_size = {256, 1, 1};
  r.dispatch_info.grid_size = {1'000'000, 1, 1};
  const NameId name = intern("_Z5scalePfi");

  const KernelComplete c = kernel_complete(r, name, 1);
  CHECK(c.correlation == 1234);  // the dispatch id, not the API call's correlation
  CHECK(c.stream == 0xabc);
  CHECK(c.device == 1);
  CHECK(c.name == name);
  CHECK(c.grid == Dim3{3907, 1, 1});
  CHECK(c.block == Dim3{256, 1, 1});
  CHECK(c.shared_mem_bytes == 4096);
  CHECK(c.start_ns == 5'000);
  CHECK(c.end_ns == 7'500);
  CHECK(c.op == 9);  // the operator the launching thread was in

  const KernelLaunch l = kernel_launch(r.dispatch_info, name, 1, 4242, 4'000);
  CHECK(l.correlation == c.correlation);
  CHECK(l.grid == c.grid);
  CHECK(l.block == c.block);
  CHECK(l.thread == 4242);
  CHECK(l.time_ns == 4'000);
}

TEST_CASE("copies take their kind from the operation and their device from the GPU end") {
  Agents agents;
  agents.add(Agent{.id = {0x100}}, false);
  agents.add(Agent{.id = {0x200}, .logical_node_type_id = 0}, true);
  agents.add(Agent{.id = {0x300}, .logical_node_type_id = 1}, true);
  CopyRecord r;
  r.correlation_id = {.internal = 17, .external = {.value = 3}};
  r.bytes = 1 << 20;
  r.start_timestamp = 100;
  r.end_timestamp = 350;

  r.operation = copy_op::host_to_device, r.src_agent_id = {0x100}, r.dst_agent_id = {0x300};
  Memcpy m = memcpy_of(r, agents);
  CHECK(m.copy_kind == CopyKind::h2d);
  CHECK(m.device == 1);
  CHECK(m.correlation == 17);
  CHECK(m.bytes == 1u << 20);
  CHECK(m.end_ns - m.start_ns == 250);
  CHECK(m.op == 3);

  r.operation = copy_op::device_to_host, r.src_agent_id = {0x300}, r.dst_agent_id = {0x100};
  m = memcpy_of(r, agents);
  CHECK(m.copy_kind == CopyKind::d2h);
  CHECK(m.device == 1);

  r.operation = copy_op::device_to_device, r.src_agent_id = {0x300}, r.dst_agent_id = {0x300};
  CHECK(memcpy_of(r, agents).copy_kind == CopyKind::d2d);
  r.src_agent_id = {0x200};
  m = memcpy_of(r, agents);
  CHECK(m.copy_kind == CopyKind::peer);
  CHECK(m.device == 1);  // the destination

  r.operation = copy_op::host_to_host, r.src_agent_id = {0x100}, r.dst_agent_id = {0x100};
  CHECK(memcpy_of(r, agents).copy_kind == CopyKind::h2h);
  r.operation = 0;
  CHECK(memcpy_of(r, agents).copy_kind == CopyKind::unknown);
}

TEST_CASE("allocation calls become allocations of the right kind, at their exit") {
  HipArgs a{};
  void* out = fake(0x7f00'0000'0000);
  SUBCASE("hipMalloc") {
    a.hipMalloc = {&out, 4096};
    const auto m = mem_alloc(HipCall::malloc, a, 1, 77);
    REQUIRE(m);
    CHECK(m->address == 0x7f00'0000'0000);
    CHECK(m->bytes == 4096);
    CHECK(m->device == 1);
    CHECK(m->mem_kind == MemKind::device);
    CHECK(m->time_ns == 77);
  }
  SUBCASE("hipMallocManaged") {
    a.hipMallocManaged = {&out, 1 << 20, 1};
    CHECK(mem_alloc(HipCall::malloc_managed, a, 0, 0)->mem_kind == MemKind::managed);
  }
  SUBCASE("hipHostMalloc") {
    a.hipHostMalloc = {&out, 64, 0};
    const auto m = mem_alloc(HipCall::host_malloc, a, 0, 0);
    CHECK(m->mem_kind == MemKind::pinned_host);
    CHECK(m->bytes == 64);
  }
  SUBCASE("hipExtMallocWithFlags") {
    a.hipExtMallocWithFlags = {&out, 512, 0};
    CHECK(mem_alloc(HipCall::ext_malloc, a, 0, 0)->bytes == 512);
  }
  SUBCASE("hipMallocAsync and hipMallocFromPoolAsync are stream-ordered pool memory") {
    a.hipMallocAsync = {&out, 256, fake_stream(0x51)};
    auto m = mem_alloc(HipCall::malloc_async, a, 0, 0);
    CHECK(m->mem_kind == MemKind::pool);
    CHECK(m->stream == 0x51);
    a.hipMallocFromPoolAsync = {&out, 128, nullptr, fake_stream(0x52)};
    m = mem_alloc(HipCall::malloc_pool, a, 0, 0);
    CHECK(m->bytes == 128);
    CHECK(m->stream == 0x52);
  }
  SUBCASE("a zero-byte allocation (nullptr out) and other calls allocate nothing") {
    void* null = nullptr;
    a.hipMalloc = {&null, 0};
    CHECK_FALSE(mem_alloc(HipCall::malloc, a, 0, 0));
    a.hipMalloc = {nullptr, 0};
    CHECK_FALSE(mem_alloc(HipCall::malloc, a, 0, 0));
    CHECK_FALSE(mem_alloc(HipCall::memset, a, 0, 0));
  }
}

TEST_CASE("free calls become frees with the bytes their allocation had") {
  HipArgs a{};
  LiveAllocations live;
  void* out = fake(0x1000);
  a.hipMalloc = {&out, 4096};
  live.add(*mem_alloc(HipCall::malloc, a, 0, 0));

  a.hipFree = {fake(0x1000)};
  auto f = mem_free(HipCall::free, a, 0, 90);
  REQUIRE(f);
  CHECK(f->address == 0x1000);
  CHECK(f->mem_kind == MemKind::device);
  CHECK(f->time_ns == 90);
  live.remove(*f);
  CHECK(f->bytes == 4096);
  auto again = *f;  // a second free of the same address: the size is gone
  again.bytes = 0;
  live.remove(again);
  CHECK(again.bytes == 0);

  a.hipHostFree = {fake(0x2000)};
  CHECK(mem_free(HipCall::host_free, a, 0, 0)->mem_kind == MemKind::pinned_host);
  a.hipFreeAsync = {fake(0x3000), fake_stream(0x51)};
  f = mem_free(HipCall::free_async, a, 0, 0);
  CHECK(f->mem_kind == MemKind::pool);
  CHECK(f->stream == 0x51);
  a.hipFree = {nullptr};
  CHECK_FALSE(mem_free(HipCall::free, a, 0, 0));  // hipFree(nullptr)
  CHECK_FALSE(mem_free(HipCall::malloc, a, 0, 0));
}

TEST_CASE("memsets and synchronisations carry host times around the call") {
  HipArgs a{};
  a.hipMemsetAsync = {fake(0x4000), 0xff, 1024, fake_stream(0x60)};
  const auto m = memset_of(HipCall::memset_async, a, 55, 1, 10, 20, 4);
  REQUIRE(m);
  CHECK(m->address == 0x4000);
  CHECK(m->value == 0xff);
  CHECK(m->bytes == 1024);
  CHECK(m->stream == 0x60);
  CHECK(m->correlation == 55);
  CHECK(m->op == 4);
  CHECK(m->end_ns - m->start_ns == 10);
  a.hipMemset = {fake(0x5000), 0, 8};
  CHECK(memset_of(HipCall::memset, a, 0, 0, 0, 0, 0)->bytes == 8);
  CHECK_FALSE(memset_of(HipCall::free, a, 0, 0, 0, 0, 0));

  a.hipStreamSynchronize = {fake_stream(0x61)};
  const auto s = synchronize_of(HipCall::stream_sync, a, 1, 99, 100, 900);
  REQUIRE(s);
  CHECK(s->sync_kind == SyncKind::stream);
  CHECK(s->stream == 0x61);
  CHECK(s->thread == 99);
  CHECK(s->end_ns - s->start_ns == 800);
  CHECK(synchronize_of(HipCall::device_sync, a, 0, 0, 0, 0)->sync_kind == SyncKind::device);
  CHECK(synchronize_of(HipCall::device_sync, a, 0, 0, 0, 0)->stream == 0);
  CHECK(synchronize_of(HipCall::event_sync, a, 0, 0, 0, 0)->sync_kind == SyncKind::event);
  CHECK_FALSE(synchronize_of(HipCall::malloc, a, 0, 0, 0, 0));
}

TEST_CASE("code objects become module loads sized by their image") {
  const LoadData d{.code_object_id = 3, .load_size = 8192, .memory_size = 20000};
  ModuleLoad m = module_load(d, true, 1, 500);
  CHECK(m.module == 3);
  CHECK(m.image_bytes == 20000);
  CHECK(m.device == 1);
  CHECK(m.time_ns == 500);
  CHECK(module_load(d, false, 1, 500).image_bytes == 8192);
}

TEST_CASE("the call classes partition the HIP calls") {
  for (auto c : {HipCall::malloc, HipCall::malloc_managed, HipCall::host_malloc,
                 HipCall::ext_malloc, HipCall::malloc_async, HipCall::malloc_pool}) {
    CHECK(allocates(c));
    CHECK_FALSE(frees(c));
  }
  for (auto c : {HipCall::free, HipCall::host_free, HipCall::free_async}) {
    CHECK(frees(c));
    CHECK_FALSE(allocates(c));
  }
  for (auto c : {HipCall::other, HipCall::memset, HipCall::device_sync, HipCall::set_device}) {
    CHECK_FALSE(allocates(c));
    CHECK_FALSE(frees(c));
  }
  CHECK(sets_memory(HipCall::memset_async));
  CHECK_FALSE(sets_memory(HipCall::malloc));
}
