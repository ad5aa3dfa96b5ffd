// The events that flow from handlers through processors to tools.
// Every event is a small trivially-copyable struct; strings travel as NameIds.
// Their fields are reflected in core/detail/reflect.hpp, for the code that
// needs it (traces), so that a pipeline alone does not pay for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <type_traits>

#include <pasta/core/names.hpp>
#include <pasta/core/type_list.hpp>

namespace pasta {

// Stable numbers: they are written into trace files (docs/trace-format.md).
enum class EventKind : std::uint16_t {
  device_info = 1,
  kernel_launch = 2,
  kernel_complete = 3,
  mem_alloc = 4,
  mem_free = 5,
  memcpy = 6,
  memset = 7,
  synchronize = 8,
  module_load = 9,
  mem_access = 10,
  access_histogram = 11,
  scope_begin = 12,
  scope_end = 13,
  op_begin = 14,
  op_end = 15,
  tensor_alloc = 16,
  tensor_free = 17,
  kernel_counters = 18,
  stall_sample = 19,
  tensor_view = 20,
  fused_kernel = 21,
  pc_access_count = 22,
  module_call = 23,
  module_image = 1000,  // from 1000 on: never in a trace
};

struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
  friend bool operator==(const Dim3&, const Dim3&) = default;
  friend auto operator<=>(const Dim3&, const Dim3&) = default;
};

enum class MemKind : std::uint8_t {
  unknown = 0,
  device = 1,
  managed = 2,
  pinned_host = 3,
  pool = 4
};
enum class CopyKind : std::uint8_t { unknown = 0, h2d = 1, d2h = 2, d2d = 3, h2h = 4, peer = 5 };
enum class SyncKind : std::uint8_t { unknown = 0, device = 1, context = 2, stream = 3, event = 4 };
enum class MemSpace : std::uint8_t { global = 0, shared = 1, local = 2 };

// Names of enum values, as reports and trace dumps print them. An enum's
// valid values are 0 .. size-1 of its table.
template <class E>
inline constexpr std::string_view enum_names[1] = {""};
template <>
inline constexpr std::string_view enum_names<MemKind>[] = {"unknown", "device", "managed",
                                                           "pinned_host", "pool"};
template <>
inline constexpr std::string_view enum_names<CopyKind>[] = {"unknown", "h2d", "d2h",
                                                            "d2d",     "h2h", "peer"};
template <>
inline constexpr std::string_view enum_names<SyncKind>[] = {"unknown", "device", "context",
                                                            "stream", "event"};
template <>
inline constexpr std::string_view enum_names<MemSpace>[] = {"global", "shared", "local"};

template <class E>
requires std::is_enum_v<E>
constexpr std::string_view to_string(E v) {
  const auto i = static_cast<std::size_t>(v);
  return i < std::size(enum_names<E>) ? enum_names<E>[i] : std::string_view("invalid");
}

// Bits of MemAccess::flags.
namespace access {
inline constexpr std::uint8_t read = 1;
inline constexpr std::uint8_t write = 2;
inline constexpr std::uint8_t atomic = 4;
}  // namespace access

// Times are nanoseconds in the clock of whoever produced them (device
// timestamps for *_ns fields filled from activity records, a host steady
// clock otherwise); 0 means unknown.

// The time from `start` to `end`; 0 when the start is unknown or the two
// are out of order.
constexpr std::uint64_t duration_ns(std::uint64_t start, std::uint64_t end) {
  return start && end >= start ? end - start : 0;
}

struct DeviceInfo {  // one per device the handler sees, emitted when it attaches
  static constexpr EventKind kind = EventKind::device_info;
  static constexpr std::string_view type_name = "DeviceInfo";
  std::uint32_t device = 0;
  NameId name{};
  std::uint32_t cc_major = 0, cc_minor = 0;
  std::uint32_t sm_count = 0;
  std::uint64_t global_mem_bytes = 0;
};

struct KernelLaunch {  // the host asked for a kernel
  static constexpr EventKind kind = EventKind::kernel_launch;
  static constexpr std::string_view type_name = "KernelLaunch";
  std::uint64_t correlation = 0;  // joins launch, completion and access events
  std::uint64_t context = 0;
  std::uint64_t stream = 0;
  std::uint32_t device = 0;
  NameId name{};
  Dim3 grid{}, block{};
  std::uint32_t shared_mem_bytes = 0;
  std::uint32_t thread = 0;  // OS thread id of the launching thread
  std::uint64_t time_ns = 0;
};

struct KernelComplete {  // the device ran it
  static constexpr EventKind kind = EventKind::kernel_complete;
  static constexpr std::string_view type_name = "KernelComplete";
  std::uint64_t correlation = 0;
  std::uint64_t context = 0;
  std::uint64_t stream = 0;
  std::uint32_t device = 0;
  NameId name{};
  Dim3 grid{}, block{};
  std::uint32_t shared_mem_bytes = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint64_t op = 0;  // OpBegin::id of the operator that launched it; 0 = none known
};

struct MemAlloc {
  static constexpr EventKind kind = EventKind::mem_alloc;
  static constexpr std::string_view type_name = "MemAlloc";
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint32_t device = 0;
  MemKind mem_kind = MemKind::unknown;
  std::uint64_t stream = 0;  // for stream-ordered (pool) allocations
  std::uint64_t time_ns = 0;
};

struct MemFree {
  static constexpr EventKind kind = EventKind::mem_free;
  static constexpr std::string_view type_name = "MemFree";
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;  // 0 when the handler does not know
  std::uint32_t device = 0;
  MemKind mem_kind = MemKind::unknown;
  std::uint64_t stream = 0;
  std::uint64_t time_ns = 0;
};

struct Memcpy {
  static constexpr EventKind kind = EventKind::memcpy;
  static constexpr std::string_view type_name = "Memcpy";
  std::uint64_t correlation = 0;
  std::uint64_t context = 0;
  std::uint64_t stream = 0;
  std::uint32_t device = 0;
  CopyKind copy_kind = CopyKind::unknown;
  std::uint64_t bytes = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint64_t op = 0;  // as KernelComplete::op
};

struct Memset {
  static constexpr EventKind kind = EventKind::memset;
  static constexpr std::string_view type_name = "Memset";
  std::uint64_t correlation = 0;
  std::uint64_t context = 0;
  std::uint64_t stream = 0;
  std::uint32_t device = 0;
  std::uint32_t value = 0;
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint64_t op = 0;  // as KernelComplete::op
};

struct Synchronize {
  static constexpr EventKind kind = EventKind::synchronize;
  static constexpr std::string_view type_name = "Synchronize";
  SyncKind sync_kind = SyncKind::unknown;
  std::uint32_t device = 0;
  std::uint64_t context = 0;
  std::uint64_t stream = 0;
  std::uint32_t thread = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
};

struct ModuleLoad {
  static constexpr EventKind kind = EventKind::module_load;
  static constexpr std::string_view type_name = "ModuleLoad";
  std::uint32_t device = 0;
  std::uint64_t context = 0;
  std::uint64_t module = 0;  // handler-specific module handle
  std::uint64_t image_bytes = 0;
  std::uint64_t time_ns = 0;
};

// A module's image (a cubin) as it loads, for tools that read machine code
// (tools::StallBlame). The bytes are valid only while on(const ModuleImage&)
// runs. Not in all_events: traces do not carry it.
struct ModuleImage {
  static constexpr EventKind kind = EventKind::module_image;
  static constexpr std::string_view type_name = "ModuleImage";
  std::uint32_t device = 0;
  std::uint64_t module = 0;
  const std::byte* image = nullptr;
  std::uint64_t image_bytes = 0;
};

struct MemAccess {  // one access by one thread, as a conventional trace records it
  static constexpr EventKind kind = EventKind::mem_access;
  static constexpr std::string_view type_name = "MemAccess";
  std::uint64_t correlation = 0;  // of the kernel launch that made it
  std::uint64_t address = 0;
  std::uint64_t pc = 0;          // offset within the function, when known
  std::uint64_t alloc_base = 0;  // filled by the processor; 0 = no live allocation
  std::uint32_t device = 0;
  std::uint32_t bytes = 0;
  std::uint8_t flags = 0;  // access::read | access::write | access::atomic
  MemSpace space = MemSpace::global;
};

struct AccessHistogram {  // one bin of a per-kernel access histogram
  static constexpr EventKind kind = EventKind::access_histogram;
  static constexpr std::string_view type_name = "AccessHistogram";
  std::uint64_t correlation = 0;
  std::uint64_t address = 0;     // first byte of the bin
  std::uint64_t alloc_base = 0;  // filled by the processor; 0 = no live allocation
  std::uint32_t device = 0;
  std::uint32_t bin_bytes = 0;
  std::uint64_t reads = 0, writes = 0;
  std::uint64_t read_bytes = 0, write_bytes = 0;
};

// Accesses of one instruction of a launch, counted on the device (a
// handler under proc::GpuBucketing) or made of one raw access (proc::Cpu):
// `count` accesses by the instruction at `pc`, to addresses that all resolve
// as `address` does under the AccessRegions the pipeline's tools gave for
// the launch (core/access_regions.hpp). A tool that consumes this counts
// per instruction what it would count from `count` MemAccess records at
// `address`.
struct PcAccessCount {
  static constexpr EventKind kind = EventKind::pc_access_count;
  static constexpr std::string_view type_name = "PcAccessCount";
  std::uint64_t correlation = 0;  // of the kernel launch that made them
  std::uint64_t address = 0;      // one of the addresses (the first counted)
  std::uint64_t pc = 0;           // offset within the function
  std::uint64_t count = 0;        // accesses
  std::uint64_t bytes = 0;        // bytes they moved
  std::uint32_t device = 0;
  std::uint8_t flags = 0;  // access::read | access::write | access::atomic
  MemSpace space = MemSpace::global;
};

struct ScopeBegin {  // PASTA_SCOPE, pasta::start, NVTX ranges
  static constexpr EventKind kind = EventKind::scope_begin;
  static constexpr std::string_view type_name = "ScopeBegin";
  NameId name{};
  std::uint32_t thread = 0;
  std::uint32_t depth = 0;  // 0 for an outermost scope of its thread
  std::uint64_t time_ns = 0;
};

struct ScopeEnd {
  static constexpr EventKind kind = EventKind::scope_end;
  static constexpr std::string_view type_name = "ScopeEnd";
  NameId name{};
  std::uint32_t thread = 0;
  std::uint32_t depth = 0;
  std::uint64_t time_ns = 0;
};

struct OpBegin {  // a framework operator (e.g. an ATen op)
  static constexpr EventKind kind = EventKind::op_begin;
  static constexpr std::string_view type_name = "OpBegin";
  std::uint64_t id = 0;        // unique per operator call, joins begin and end; never 0
  std::uint64_t parent = 0;    // id of the enclosing operator on the same thread; 0 = none
  std::int64_t sequence = -1;  // the framework's sequence number, -1 if none
  NameId name{};
  NameId inputs{};  // input shapes and dtypes, e.g. "float[32, 3, 224, 224], float[64]"; 0 = not
                    // recorded
  std::uint32_t thread = 0;
  std::uint32_t depth = 0;  // 0 for an outermost operator of its thread
  std::uint64_t time_ns = 0;
  // The framework module (a PyTorch nn.Module) the call ran in, as ModuleCall::module
  // names it; a backward operator gets the module whose forward made it. 0 = none.
  NameId module{};
  NameId source{};         // "file:line" of the program's code that called it; 0 = not known
  std::uint8_t backward = 0;  // 1: autograd's backward of a forward operator
};

struct OpEnd {
  static constexpr EventKind kind = EventKind::op_end;
  static constexpr std::string_view type_name = "OpEnd";
  std::uint64_t id = 0;
  NameId name{};
  std::uint32_t thread = 0;
  std::uint32_t depth = 0;
  std::uint64_t time_ns = 0;
};

// TensorAlloc/TensorFree::device of host (CPU) memory.
inline constexpr std::uint32_t host_device = 0xFFFFFFFFu;

struct TensorAlloc {  // a framework allocator handed out memory
  static constexpr EventKind kind = EventKind::tensor_alloc;
  static constexpr std::string_view type_name = "TensorAlloc";
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint32_t device = 0;
  std::uint64_t total_allocated = 0;  // the allocator's own count after this allocation
  std::uint64_t total_reserved = 0;
  std::uint64_t time_ns = 0;
  std::uint64_t op = 0;  // OpBegin::id of the innermost operator of the allocating thread
  std::uint32_t thread = 0;
};

struct TensorFree {
  static constexpr EventKind kind = EventKind::tensor_free;
  static constexpr std::string_view type_name = "TensorFree";
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint32_t device = 0;
  std::uint64_t total_allocated = 0;
  std::uint64_t total_reserved = 0;
  std::uint64_t time_ns = 0;
};

// A framework tensor that is a view: it covers part of its storage, or
// reads it in another shape or order (a slice, a transpose, a split). The
// framework handler reports each view an operator takes as input, once per
// call, so tools can link views to their base storage.
struct TensorView {
  static constexpr EventKind kind = EventKind::tensor_view;
  static constexpr std::string_view type_name = "TensorView";
  // Every operator's inputs, read on each call: turned on only by a tool
  // naming it (stall blame on views), never by one that takes every event.
  static constexpr bool on_request = true;
  std::uint64_t address = 0;     // its first element
  std::uint64_t bytes = 0;       // from its first element to past its last (strides included)
  std::uint64_t base = 0;        // its storage's start: TensorAlloc::address of the base
  std::uint64_t base_bytes = 0;  // its storage's size
  NameId layout{};               // "Float[4, 8, 64] strides [1536, 192, 1]" (strides in elements)
  std::uint32_t element_bytes = 0;
  std::uint32_t device = 0;  // as TensorAlloc::device
  std::uint64_t op = 0;      // OpBegin::id of the operator that took it as input
  std::uint32_t thread = 0;
};

struct KernelCounters {  // hardware counters of one kernel launch, from a profiling handler
  static constexpr EventKind kind = EventKind::kernel_counters;
  static constexpr std::string_view type_name = "KernelCounters";
  // Kernel replay: turned on only by a tool naming it (ToolRequests, core/concepts.hpp).
  static constexpr bool on_request = true;
  std::uint64_t correlation = 0;  // of the launch measured (KernelComplete::correlation)
  std::uint32_t device = 0;
  std::uint32_t passes = 0;  // replays of the kernel it took to collect them
  // Each field is the value of the ncu metric core/metrics.hpp names for it.
  double dram_bytes_read = 0, dram_bytes_write = 0;
  double dram_throughput_pct = 0, sm_throughput_pct = 0;
  double l1_hit_rate_pct = 0, l2_hit_rate_pct = 0;
  double achieved_occupancy_pct = 0;
  double tensor_active_pct = 0;
  double inst_executed = 0;
  double flops = 0;  // floating-point operations (an FMA counts two), all precisions
  // 1: replayed by a kernel replay that leaves its restore of the kernel's
  // memory in L2 (CUPTI's); 0: by one that flushes L2 before every pass
  // (pasta's own), or measured in one pass.
  std::uint8_t l2_warm_replay = 0;
};

struct StallSample {  // PC sampling: warps found stalled at one instruction, for one reason
  static constexpr EventKind kind = EventKind::stall_sample;
  static constexpr std::string_view type_name = "StallSample";
  // PC sampling: turned on only by a tool naming it (ToolRequests, core/concepts.hpp).
  static constexpr bool on_request = true;
  NameId function{};     // the kernel (mangled name) the instruction belongs to
  std::uint64_t pc = 0;  // offset of the instruction within the function
  NameId reason{};       // the stall reason as the sampler names it, e.g. "long_scoreboard"
  std::uint64_t samples = 0;
  std::uint32_t device = 0;
};

// A kernel a compiler generated (an Inductor Triton kernel of a torch.compile'd
// model) being launched, with the framework operators the compiler says it
// fuses. The framework handler opens an operator call named after the kernel
// around each launch (OpBegin `op`) and emits this right after its OpBegin, so
// the kernel's KernelComplete::op is `op`.
struct FusedKernel {
  static constexpr EventKind kind = EventKind::fused_kernel;
  static constexpr std::string_view type_name = "FusedKernel";
  std::uint64_t op = 0;  // OpBegin::id of the launching call
  NameId kernel{};       // the compiler's kernel name, e.g. "triton_poi_fused_add_relu_0"
  NameId source{};       // what identifies the kernel: Inductor's source hash (its cache file's stem)
  NameId fused{};        // the operators it fuses as the compiler lists them, in operator events'
                         // spelling and the compiler's order: "aten::add, aten::relu"; 0 = none named
  NameId graph{};        // where that list was read: the compiled graph's module file
};

// A framework module (a PyTorch nn.Module) called, emitted when the call
// returns. `module` names the module by where it sits: its root module's
// class, then the attribute path from there, "GPT2LMHeadModel.transformer.h.3.attn";
// the same module reached from another parent is another entry. Operators
// inside carry it as OpBegin::module.
struct ModuleCall {
  static constexpr EventKind kind = EventKind::module_call;
  static constexpr std::string_view type_name = "ModuleCall";
  NameId module{};
  NameId parent{};       // the calling module's `module`; 0 for a root
  NameId class_name{};   // "GPT2Attention"
  NameId source{};       // "file:line" of the program's code that called it; 0 = not known
  std::uint32_t thread = 0;
  std::uint32_t depth = 0;  // 0 for a root
  std::uint64_t begin_ns = 0, end_ns = 0;
};

// Every event type, in EventKind order. A new event goes here and in
// EventKind, and gets a PASTA_REFLECT line in detail/reflect.hpp.
inline constexpr TypeList<DeviceInfo, KernelLaunch, KernelComplete, MemAlloc, MemFree, Memcpy,
                          Memset, Synchronize, ModuleLoad, MemAccess, AccessHistogram, ScopeBegin,
                          ScopeEnd, OpBegin, OpEnd, TensorAlloc, TensorFree, KernelCounters,
                          StallSample, TensorView, FusedKernel, PcAccessCount, ModuleCall>
    all_events{};

namespace detail {

constexpr std::string_view event_name(EventKind k) {
  std::string_view name = "unknown";
  for_each_type(all_events, [&](auto type) {
    using E = typename decltype(type)::type;
    if (E::kind == k) name = E::type_name;
  });
  return name;
}

inline constexpr std::size_t event_type_count = all_events.size;

}  // namespace detail

template <class E>
concept Event = std::is_trivially_copyable_v<E> && requires {
  { E::kind } -> std::convertible_to<EventKind>;
  { E::type_name } -> std::convertible_to<std::string_view>;
};

// An event traces carry: kinds from 1000 on (ModuleImage) live only in
// the process.
template <class E>
concept TraceEvent = Event<E> && static_cast<unsigned>(E::kind) < 1000;

}  // namespace pasta
