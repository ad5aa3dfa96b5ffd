// rocprofiler-sdk records -> pasta events. Pure functions templated on the
// record types, so this header needs no ROCm header: the handler
// (amd/rocprofiler.hpp) instantiates them with rocprofiler-sdk's structs,
// CPU tests with hand-built structs of the same field names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include <pasta/core/events.hpp>
#include <pasta/core/names.hpp>

namespace pasta::amd::detail {

// rocprofiler_memory_copy_operation_t's values (ROCm 6.2+; the handler
// static_asserts that they match the installed headers).
namespace copy_op {
inline constexpr int host_to_host = 1;
inline constexpr int host_to_device = 2;
inline constexpr int device_to_host = 3;
inline constexpr int device_to_device = 4;
}  // namespace copy_op

// The HIP runtime calls the handler turns into events; the handler maps
// rocprofiler's operation ids onto these (hip_call_of in rocprofiler.hpp).
enum class HipCall : std::uint8_t {
  other,
  malloc,          // hipMalloc
  malloc_managed,  // hipMallocManaged
  host_malloc,     // hipHostMalloc
  ext_malloc,      // hipExtMallocWithFlags
  malloc_async,    // hipMallocAsync
  malloc_pool,     // hipMallocFromPoolAsync
  free,            // hipFree
  host_free,       // hipHostFree
  free_async,      // hipFreeAsync
  memset,          // hipMemset
  memset_async,    // hipMemsetAsync
  device_sync,     // hipDeviceSynchronize
  stream_sync,     // hipStreamSynchronize
  event_sync,      // hipEventSynchronize
  set_device,      // hipSetDevice
};

inline bool allocates(HipCall c) { return c >= HipCall::malloc && c <= HipCall::malloc_pool; }
inline bool frees(HipCall c) { return c >= HipCall::free && c <= HipCall::free_async; }
inline bool sets_memory(HipCall c) { return c == HipCall::memset || c == HipCall::memset_async; }

inline SyncKind sync_kind(HipCall c) {
  switch (c) {
    case HipCall::device_sync:
      return SyncKind::device;
    case HipCall::stream_sync:
      return SyncKind::stream;
    case HipCall::event_sync:
      return SyncKind::event;
    default:
      return SyncKind::unknown;
  }
}

// rocprofiler's grid_size counts work-items, pasta's grid counts blocks (as
// CUDA's does): a partial last workgroup is a block too.
template <class D3>
Dim3 blocks_of(const D3& grid_items, const D3& workgroup) {
  auto blocks = [](std::uint32_t items, std::uint32_t group) {
    return group ? (items + group - 1) / group : items;
  };
  return {blocks(grid_items.x, workgroup.x), blocks(grid_items.y, workgroup.y),
          blocks(grid_items.z, workgroup.z)};
}
template <class D3>
Dim3 dim3_of(const D3& d) {
  return {d.x, d.y, d.z};
}

// Kernel symbols name the kernel descriptor ("_Z6vecaddPfS_i.kd"); reports
// want the function's name.
inline std::string_view kernel_name_of(const char* symbol) {
  if (!symbol) return {};
  std::string_view s(symbol);
  if (s.ends_with(".kd")) s.remove_suffix(3);
  return s;
}

// GPU agents get the device numbers HIP gives them (logical_node_type_id);
// everything else (CPUs, agents never seen) is device 0.
class Agents {
 public:
  template <class Agent>
  void add(const Agent& a, bool gpu) {
    if (gpu) devices_[a.id.handle] = static_cast<std::uint32_t>(a.logical_node_type_id);
  }
  std::uint32_t device(std::uint64_t handle) const {
    auto it = devices_.find(handle);
    return it == devices_.end() ? 0 : it->second;
  }
  bool is_gpu(std::uint64_t handle) const { return devices_.count(handle) != 0; }

 private:
  std::unordered_map<std::uint64_t, std::uint32_t> devices_;
};

// gfx_target_version is major*10000 + minor*100 + stepping (gfx90a: 90010).
// pasta's cc_major/cc_minor hold the major and minor*100+stepping.
template <class Agent>
DeviceInfo device_info(const Agent& a, NameId name, std::uint64_t memory_bytes) {
  return {.device = static_cast<std::uint32_t>(a.logical_node_type_id),
          .name = name,
          .cc_major = (a.gfx_target_version / 10000) % 100,
          .cc_minor = a.gfx_target_version % 10000,
          .sm_count = a.cu_count,
          .global_mem_bytes = memory_bytes};
}

// The kernel-symbol registrations: kernel_id -> interned name. Written by
// code-object callbacks, read by dispatch callbacks and buffer records, on
// different threads.
class KernelNames {
 public:
  void add(std::uint64_t kernel_id, const char* symbol) {
    const NameId name = intern(kernel_name_of(symbol));
    std::lock_guard lock(mutex_);
    names_[kernel_id] = name;
  }
  NameId find(std::uint64_t kernel_id) const {
    std::lock_guard lock(mutex_);
    auto it = names_.find(kernel_id);
    return it == names_.end() ? unknown() : it->second;
  }
  static NameId unknown() {
    static const NameId id = intern("(unregistered kernel)");
    return id;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, NameId> names_;
};

// The launch as the enqueue-phase dispatch callback sees it, on the
// launching thread. The correlation is the dispatch id: unique per kernel,
// where one API call (a graph launch) may dispatch many kernels under one
// correlation id.
template <class DispatchInfo>
KernelLaunch kernel_launch(const DispatchInfo& d, NameId name, std::uint32_t device,
                           std::uint32_t thread, std::uint64_t time_ns) {
  return {.correlation = d.dispatch_id,
          .context = 0,
          .stream = d.queue_id.handle,
          .device = device,
          .name = name,
          .grid = blocks_of(d.grid_size, d.workgroup_size),
          .block = dim3_of(d.workgroup_size),
          .shared_mem_bytes = d.group_segment_size,
          .thread = thread,
          .time_ns = time_ns};
}

// A completed dispatch from the kernel-dispatch buffer, with device times.
// `op` is the external correlation id the operator source pushed (0: none).
template <class DispatchRecord>
KernelComplete kernel_complete(const DispatchRecord& r, NameId name, std::uint32_t device) {
  const auto& d = r.dispatch_info;
  return {.correlation = d.dispatch_id,
          .context = 0,
          .stream = d.queue_id.handle,
          .device = device,
          .name = name,
          .grid = blocks_of(d.grid_size, d.workgroup_size),
          .block = dim3_of(d.workgroup_size),
          .shared_mem_bytes = d.group_segment_size,
          .start_ns = r.start_timestamp,
          .end_ns = r.end_timestamp,
          .op = r.correlation_id.external.value};
}

inline CopyKind copy_kind(int operation) {
  switch (operation) {
    case copy_op::host_to_host:
      return CopyKind::h2h;
    case copy_op::host_to_device:
      return CopyKind::h2d;
    case copy_op::device_to_host:
      return CopyKind::d2h;
    case copy_op::device_to_device:
      return CopyKind::d2d;
    default:
      return CopyKind::unknown;
  }
}

// A copy from the memory-copy buffer. Its device is the GPU end (the
// destination when both are GPUs); a copy between two different GPUs is a
// peer copy.
template <class CopyRecord>
Memcpy memcpy_of(const CopyRecord& r, const Agents& agents) {
  const std::uint64_t dst = r.dst_agent_id.handle, src = r.src_agent_id.handle;
  CopyKind kind = copy_kind(static_cast<int>(r.operation));
  if (kind == CopyKind::d2d && dst != src && agents.is_gpu(dst) && agents.is_gpu(src))
    kind = CopyKind::peer;
  return {.correlation = r.correlation_id.internal,
          .context = 0,
          .stream = 0,
          .device = agents.device(agents.is_gpu(dst) ? dst : src),
          .copy_kind = kind,
          .bytes = r.bytes,
          .start_ns = r.start_timestamp,
          .end_ns = r.end_timestamp,
          .op = r.correlation_id.external.value};
}

inline MemKind mem_kind(HipCall c) {
  switch (c) {
    case HipCall::malloc:
    case HipCall::ext_malloc:
    case HipCall::free:
      return MemKind::device;
    case HipCall::malloc_managed:
      return MemKind::managed;
    case HipCall::host_malloc:
    case HipCall::host_free:
      return MemKind::pinned_host;
    case HipCall::malloc_async:
    case HipCall::malloc_pool:
    case HipCall::free_async:
      return MemKind::pool;
    default:
      return MemKind::unknown;
  }
}

template <class T>
std::uint64_t address_of(T* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}
template <class T>
std::uint64_t handle_of(T h) {  // hipStream_t and friends, as numbers
  if constexpr (std::is_pointer_v<T>)
    return reinterpret_cast<std::uintptr_t>(h);
  else
    return static_cast<std::uint64_t>(h);
}

// An allocation call that returned success, read at its exit phase (the
// out-pointer holds the address by then). `Args` is rocprofiler's union of
// HIP API arguments. nullopt for calls that allocate nothing.
template <class Args>
std::optional<MemAlloc> mem_alloc(HipCall c, const Args& a, std::uint32_t device,
                                  std::uint64_t time_ns) {
  MemAlloc m{.device = device, .mem_kind = mem_kind(c), .time_ns = time_ns};
  void* const* out = nullptr;
  switch (c) {
    case HipCall::malloc:
      out = a.hipMalloc.ptr, m.bytes = a.hipMalloc.size;
      break;
    case HipCall::malloc_managed:
      out = a.hipMallocManaged.dev_ptr, m.bytes = a.hipMallocManaged.size;
      break;
    case HipCall::host_malloc:
      out = a.hipHostMalloc.ptr, m.bytes = a.hipHostMalloc.size;
      break;
    case HipCall::ext_malloc:
      out = a.hipExtMallocWithFlags.ptr, m.bytes = a.hipExtMallocWithFlags.sizeBytes;
      break;
    case HipCall::malloc_async:
      out = a.hipMallocAsync.dev_ptr, m.bytes = a.hipMallocAsync.size;
      m.stream = handle_of(a.hipMallocAsync.stream);
      break;
    case HipCall::malloc_pool:
      out = a.hipMallocFromPoolAsync.dev_ptr, m.bytes = a.hipMallocFromPoolAsync.size;
      m.stream = handle_of(a.hipMallocFromPoolAsync.stream);
      break;
    default:
      return std::nullopt;
  }
  if (!out || !*out) return std::nullopt;  // a zero-byte allocation returns nullptr
  m.address = address_of(*out);
  return m;
}

// A free call that returned success. `bytes` is what the handler recorded
// at the allocation (0 if it saw none).
template <class Args>
std::optional<MemFree> mem_free(HipCall c, const Args& a, std::uint32_t device,
                                std::uint64_t time_ns) {
  MemFree m{.device = device, .mem_kind = mem_kind(c), .time_ns = time_ns};
  switch (c) {
    case HipCall::free:
      m.address = address_of(a.hipFree.ptr);
      break;
    case HipCall::host_free:
      m.address = address_of(a.hipHostFree.ptr);
      break;
    case HipCall::free_async:
      m.address = address_of(a.hipFreeAsync.dev_ptr);
      m.stream = handle_of(a.hipFreeAsync.stream);
      break;
    default:
      return std::nullopt;
  }
  if (!m.address) return std::nullopt;  // hipFree(nullptr) frees nothing
  return m;
}

// A memset call, with host times around it (HIP reports no device record
// for memsets through rocprofiler-sdk's buffer services).
template <class Args>
std::optional<Memset> memset_of(HipCall c, const Args& a, std::uint64_t correlation,
                                std::uint32_t device, std::uint64_t start_ns, std::uint64_t end_ns,
                                std::uint64_t op) {
  Memset m{.correlation = correlation,
           .device = device,
           .start_ns = start_ns,
           .end_ns = end_ns,
           .op = op};
  switch (c) {
    case HipCall::memset:
      m.address = address_of(a.hipMemset.dst);
      m.value = static_cast<std::uint32_t>(a.hipMemset.value);
      m.bytes = a.hipMemset.sizeBytes;
      break;
    case HipCall::memset_async:
      m.address = address_of(a.hipMemsetAsync.dst);
      m.value = static_cast<std::uint32_t>(a.hipMemsetAsync.value);
      m.bytes = a.hipMemsetAsync.sizeBytes;
      m.stream = handle_of(a.hipMemsetAsync.stream);
      break;
    default:
      return std::nullopt;
  }
  return m;
}

template <class Args>
std::optional<Synchronize> synchronize_of(HipCall c, const Args& a, std::uint32_t device,
                                          std::uint32_t thread, std::uint64_t start_ns,
                                          std::uint64_t end_ns) {
  const SyncKind kind = sync_kind(c);
  if (kind == SyncKind::unknown) return std::nullopt;
  return Synchronize{
      .sync_kind = kind,
      .device = device,
      .context = 0,
      .stream = c == HipCall::stream_sync ? handle_of(a.hipStreamSynchronize.stream) : 0,
      .thread = thread,
      .start_ns = start_ns,
      .end_ns = end_ns};
}

// A code object loaded onto a device. Its size is that of the image in
// memory when it was loaded from memory (HIP's fat binaries), else that of
// the loaded segments.
template <class LoadData>
ModuleLoad module_load(const LoadData& d, bool from_memory, std::uint32_t device,
                       std::uint64_t time_ns) {
  return {.device = device,
          .context = 0,
          .module = d.code_object_id,
          .image_bytes = from_memory ? d.memory_size : d.load_size,
          .time_ns = time_ns};
}

// Sizes of live allocations, so that a free reports its bytes (HIP's free
// calls carry only the address).
class LiveAllocations {
 public:
  void add(const MemAlloc& m) {
    std::lock_guard lock(mutex_);
    bytes_[m.address] = m.bytes;
  }
  // Fills f.bytes from the allocation and forgets it.
  void remove(MemFree& f) {
    std::lock_guard lock(mutex_);
    auto it = bytes_.find(f.address);
    if (it == bytes_.end()) return;
    f.bytes = it->second;
    bytes_.erase(it);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::uint64_t> bytes_;
};

}  // namespace pasta::amd::detail
