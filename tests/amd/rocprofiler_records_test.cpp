// The record translation of amd::Rocprofiler on rocprofiler-sdk's own
// structs (records_test.cpp checks it on look-alikes, without ROCm): field
// names and types, HIP operation ids and copy operations, as the installed
// rocprofiler-sdk defines them. Needs no AMD GPU and links nothing of ROCm.
#include <doctest/doctest.h>

#include <pasta/amd/rocprofiler.hpp>

using namespace pasta;
using namespace pasta::amd::detail;

TEST_CASE("a real kernel dispatch record becomes a completion and a launch") {
  rocprofiler_buffer_tracing_kernel_dispatch_record_t r{};
  r.size = sizeof(r);
  r.kind = ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH;
  r.operation = ROCPROFILER_KERNEL_DISPATCH_COMPLETE;
  r.correlation_id.internal = 41;
  r.correlation_id.external.value = 9;
  r.start_timestamp = 5'000;
  r.end_timestamp = 7'500;
  r.dispatch_info.agent_id.handle = 0x300;
  r.dispatch_info.queue_id.handle = 0xabc;
  r.dispatch_info.kernel_id = 7;
  r.dispatch_info.dispatch_id = 1234;
  r.dispatch_info.group_segment_size = 4096;
  r.dispatch_info.workgroup_size = {256, 1, 1};
  r.dispatch_info.grid_size = {1'000'000, 2, 1};
  const NameId name = intern("_Z5scalePfi");
  const KernelComplete c = kernel_complete(r, name, 1);
  CHECK(c.correlation == 1234);
  CHECK(c.stream == 0xabc);
  CHECK(c.grid == Dim3{3907, 2, 1});
  CHECK(c.block == Dim3{256, 1, 1});
  CHECK(c.shared_mem_bytes == 4096);
  CHECK(c.end_ns - c.start_ns == 2'500);
  CHECK(c.op == 9);
  const KernelLaunch l = kernel_launch(r.dispatch_info, name, 1, 42, 4'000);
  CHECK(l.correlation == 1234);
  CHECK(l.grid == c.grid);
}

TEST_CASE("a real memory copy record takes its kind from rocprofiler's operations") {
  rocprofiler_agent_v0_t cpu{}, gpu{};
  cpu.id.handle = 1, cpu.type = ROCPROFILER_AGENT_TYPE_CPU;
  gpu.id.handle = 2, gpu.type = ROCPROFILER_AGENT_TYPE_GPU, gpu.logical_node_type_id = 3;
  gpu.gfx_target_version = 90010, gpu.cu_count = 104;
  Agents agents;
  agents.add(cpu, false);
  agents.add(gpu, true);
  rocprofiler_buffer_tracing_memory_copy_record_t r{};
  r.operation = ROCPROFILER_MEMORY_COPY_HOST_TO_DEVICE;
  r.src_agent_id.handle = 1;
  r.dst_agent_id.handle = 2;
  r.bytes = 4096;
  r.correlation_id.internal = 17;
  Memcpy m = memcpy_of(r, agents);
  CHECK(m.copy_kind == CopyKind::h2d);
  CHECK(m.device == 3);
  CHECK(m.bytes == 4096);
  CHECK(m.correlation == 17);
  r.operation = ROCPROFILER_MEMORY_COPY_DEVICE_TO_HOST;
  CHECK(memcpy_of(r, agents).copy_kind == CopyKind::d2h);
  r.operation = ROCPROFILER_MEMORY_COPY_DEVICE_TO_DEVICE;
  CHECK(memcpy_of(r, agents).copy_kind == CopyKind::d2d);
  r.operation = ROCPROFILER_MEMORY_COPY_HOST_TO_HOST;
  CHECK(memcpy_of(r, agents).copy_kind == CopyKind::h2h);
  const DeviceInfo d = device_info(gpu, intern("MI210"), 0);
  CHECK(d.device == 3);
  CHECK(d.cc_major == 9);
  CHECK(d.cc_minor == 10);
  CHECK(d.sm_count == 104);
}

TEST_CASE("real HIP API arguments become allocations, frees, memsets and syncs") {
  rocprofiler_hip_api_args_t a{};
  void* out = reinterpret_cast<void*>(0x7f0000001000);
  a.hipMalloc.ptr = &out;
  a.hipMalloc.size = 1 << 20;
  CHECK(hip_call_of(ROCPROFILER_HIP_RUNTIME_API_ID_hipMalloc) == HipCall::malloc);
  const auto m = mem_alloc(HipCall::malloc, a, 2, 10);
  REQUIRE(m);
  CHECK(m->address == 0x7f0000001000);
  CHECK(m->bytes == 1u << 20);
  CHECK(m->device == 2);

  a.hipFreeAsync.dev_ptr = out;
  a.hipFreeAsync.stream = reinterpret_cast<hipStream_t>(0x51);
  CHECK(hip_call_of(ROCPROFILER_HIP_RUNTIME_API_ID_hipFreeAsync) == HipCall::free_async);
  const auto f = mem_free(HipCall::free_async, a, 2, 20);
  REQUIRE(f);
  CHECK(f->address == 0x7f0000001000);
  CHECK(f->stream == 0x51);

  a.hipMemsetAsync.dst = out;
  a.hipMemsetAsync.value = 7;
  a.hipMemsetAsync.sizeBytes = 64;
  a.hipMemsetAsync.stream = nullptr;
  const auto s = memset_of(HipCall::memset_async, a, 1, 0, 0, 5, 0);
  REQUIRE(s);
  CHECK(s->bytes == 64);
  CHECK(s->value == 7);

  a.hipStreamSynchronize.stream = reinterpret_cast<hipStream_t>(0x52);
  const auto y = synchronize_of(HipCall::stream_sync, a, 0, 1, 10, 30);
  REQUIRE(y);
  CHECK(y->stream == 0x52);
}

TEST_CASE("every HIP call the handler subscribes to maps onto its class") {
  const std::pair<rocprofiler_tracing_operation_t, HipCall> calls[] = {
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipMalloc, HipCall::malloc},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipMallocManaged, HipCall::malloc_managed},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipHostMalloc, HipCall::host_malloc},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipExtMallocWithFlags, HipCall::ext_malloc},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipMallocAsync, HipCall::malloc_async},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipMallocFromPoolAsync, HipCall::malloc_pool},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipFree, HipCall::free},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipHostFree, HipCall::host_free},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipFreeAsync, HipCall::free_async},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipMemset, HipCall::memset},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipMemsetAsync, HipCall::memset_async},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipDeviceSynchronize, HipCall::device_sync},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipStreamSynchronize, HipCall::stream_sync},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipEventSynchronize, HipCall::event_sync},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipSetDevice, HipCall::set_device},
      {ROCPROFILER_HIP_RUNTIME_API_ID_hipLaunchKernel, HipCall::other}};
  for (auto [op, call] : calls) {
    CAPTURE(op);
    CHECK(hip_call_of(op) == call);
  }
}

TEST_CASE("code-object records give kernel names and module loads") {
  rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t sym{};
  sym.kernel_id = 11;
  sym.kernel_name = "_Z7vec_addPKfS0_Pfi.kd";
  KernelNames names;
  names.add(sym.kernel_id, sym.kernel_name);
  CHECK(name_of(names.find(11)) == "_Z7vec_addPKfS0_Pfi");
  rocprofiler_callback_tracing_code_object_load_data_t load{};
  load.code_object_id = 5;
  load.storage_type = ROCPROFILER_CODE_OBJECT_STORAGE_TYPE_MEMORY;
  load.memory_size = 30000;
  load.load_size = 12000;
  CHECK(module_load(load, true, 0, 0).image_bytes == 30000);
  CHECK(module_load(load, false, 0, 0).image_bytes == 12000);
}
