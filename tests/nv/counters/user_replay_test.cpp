// What a batch of user replays keeps: a launch's argument bytes copied
// (nv::detail::KeptLaunch), so it launches again after the caller's frame is
// gone, and the program's memory in numbered slots (nv::detail::ReplayMemory),
// against a driver whose entry points are this file's fakes; and at which
// calls of the program a batch is replayed before its time.
#include <doctest/doctest.h>

#include <pasta/nv/counters/replay_memory.hpp>
#include <pasta/nv/cupti/detail/counter_callbacks.hpp>
#include <pasta/nv/counters/user_replay.hpp>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using pasta::nv::detail::Driver;
using pasta::nv::detail::DriverLaunch;
using pasta::nv::detail::DriverLaunchExParams;
using pasta::nv::detail::DriverLaunchParams;
using pasta::nv::detail::KeptLaunch;
using pasta::nv::detail::LaunchCall;
using pasta::nv::detail::ReplayMemory;

namespace {

// The fake driver's state: a kernel's parameter layout, what the last
// launch passed, the device's memory as host bytes.
struct Fake {
  std::vector<std::pair<std::size_t, std::size_t>> layout;  // offset, size per parameter
  bool kernel_handle = false;  // the launch's handle is a CUkernel (cuFuncLoad refuses it)
  std::vector<unsigned char> launched;  // the argument bytes the last launch passed, by layout
  std::vector<unsigned char> buffer;    // the `extra` buffer the last launch passed
  CUfunction function{};
  unsigned grid = 0;
  std::vector<CUlaunchAttribute> attrs;  // the last cuLaunchKernelEx's
  std::vector<const void*> arg_pointers;  // where the last launch's arguments were read from
  // The dynamic shared memory limit, a function's or a CUkernel's for the
  // device (a launch asking for more is refused, as the driver refuses it),
  // and which handle and device the calls named.
  int shared_limit = 48 << 10;
  const void* attribute_of{};
  CUdevice device_of = -1;
  int limit_sets = 0;
  // Memory: allocations are offsets into `device`.
  std::vector<unsigned char> device;
  std::size_t free = 0, allocated = 0;
  std::vector<std::pair<CUdeviceptr, std::size_t>> allocs;
  int copies = 0;
  // Batched copies: calls made, copies in them, the stream named, and a refusal to give.
  int batches = 0, batched = 0;
  CUstream batch_stream{};
  CUresult batch_result = CUDA_SUCCESS;
  // pasta's copy kernel: its launches run here, reading their rows from `device`.
  int span_launches = 0;
  unsigned span_grid = 0;
  // The L2 flush's launches, and the rows they copied first.
  int flushes = 0;
  std::uint64_t flushed_rows = 0;
};
Fake fake;

CUresult info(std::size_t i, std::size_t* offset, std::size_t* size) {
  if (i >= fake.layout.size()) return CUDA_ERROR_INVALID_VALUE;
  *offset = fake.layout[i].first;
  *size = fake.layout[i].second;
  return CUDA_SUCCESS;
}
CUresult param_info(CUfunction, std::size_t i, std::size_t* offset, std::size_t* size) {
  return fake.kernel_handle ? CUDA_ERROR_INVALID_HANDLE : info(i, offset, size);
}
CUresult kernel_param_info(CUkernel, std::size_t i, std::size_t* offset, std::size_t* size) {
  return fake.kernel_handle ? info(i, offset, size) : CUDA_ERROR_INVALID_HANDLE;
}
CUresult function_load(CUfunction) {
  return fake.kernel_handle ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}
void record(CUfunction f, unsigned grid, void** args, void** extra) {
  fake.function = f;
  fake.grid = grid;
  fake.launched.clear();
  fake.buffer.clear();
  fake.arg_pointers.clear();
  if (args) {
    fake.arg_pointers.assign(args, args + fake.layout.size());
    std::size_t end = 0;
    for (auto [offset, size] : fake.layout) end = std::max(end, offset + size);
    fake.launched.assign(end, 0);
    for (std::size_t i = 0; i < fake.layout.size(); ++i)
      std::memcpy(fake.launched.data() + fake.layout[i].first, args[i], fake.layout[i].second);
  }
  if (extra) {
    CHECK(extra[0] == CU_LAUNCH_PARAM_BUFFER_POINTER);
    CHECK(extra[2] == CU_LAUNCH_PARAM_BUFFER_SIZE);
    CHECK(extra[4] == CU_LAUNCH_PARAM_END);
    const auto* p = static_cast<const unsigned char*>(extra[1]);
    fake.buffer.assign(p, p + *static_cast<const std::size_t*>(extra[3]));
  }
}
// The modules and functions of pasta's copy kernel (SpanCopy) and L2 flush
// (L2Flush), each found by its entry's name in the PTX.
int copier_module = 0, copier_function = 0, flush_module = 0, flush_function = 0;
CUresult module_load_data(CUmodule* m, const void* image) {
  const auto* text = static_cast<const char*>(image);
  if (std::strstr(text, ".entry pasta_copy_spans(") != nullptr)
    *m = reinterpret_cast<CUmodule>(&copier_module);
  else if (std::strstr(text, ".entry pasta_l2_flush(") != nullptr)
    *m = reinterpret_cast<CUmodule>(&flush_module);
  else
    return CUDA_ERROR_INVALID_IMAGE;
  return CUDA_SUCCESS;
}
CUresult module_function(CUfunction* f, CUmodule m, const char* name) {
  if (m == reinterpret_cast<CUmodule>(&copier_module) && std::string(name) == "pasta_copy_spans")
    *f = reinterpret_cast<CUfunction>(&copier_function);
  else if (m == reinterpret_cast<CUmodule>(&flush_module) && std::string(name) == "pasta_l2_flush")
    *f = reinterpret_cast<CUfunction>(&flush_function);
  else
    return CUDA_ERROR_NOT_FOUND;
  return CUDA_SUCCESS;
}
// The copy kernel's work: `n` rows of (to, from, bytes) at `table`.
void copy_rows(CUdeviceptr table, std::uint64_t n) {
  for (std::uint64_t e = 0; e < n; ++e) {
    std::uint64_t row[3];
    std::memcpy(row, fake.device.data() + table + 24 * e, sizeof row);
    std::memmove(fake.device.data() + row[0], fake.device.data() + row[1], row[2]);
  }
}
CUresult launch(CUfunction f, unsigned gx, unsigned, unsigned, unsigned, unsigned, unsigned,
                unsigned shared, CUstream, void** args, void** extra) {
  if (f == reinterpret_cast<CUfunction>(&copier_function)) {
    copy_rows(*static_cast<CUdeviceptr*>(args[0]), *static_cast<std::uint64_t*>(args[1]));
    ++fake.span_launches;
    fake.span_grid = gx;
    return CUDA_SUCCESS;
  }
  if (f == reinterpret_cast<CUfunction>(&flush_function)) {  // (buf, n, sink, table, rows)
    const auto rows = *static_cast<std::uint64_t*>(args[4]);
    copy_rows(*static_cast<CUdeviceptr*>(args[3]), rows);
    ++fake.flushes;
    fake.flushed_rows += rows;
    return CUDA_SUCCESS;
  }
  if (shared > static_cast<unsigned>(fake.shared_limit)) return CUDA_ERROR_INVALID_VALUE;
  record(f, gx, args, extra);
  return CUDA_SUCCESS;
}
// A function's attributes; a CUkernel is no function here.
CUresult function_attribute(int* value, CUfunction_attribute a, CUfunction f) {
  if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
  if (fake.kernel_handle) return CUDA_ERROR_INVALID_HANDLE;
  fake.attribute_of = f;
  *value = fake.shared_limit;
  return CUDA_SUCCESS;
}
CUresult set_function_attribute(CUfunction f, CUfunction_attribute a, int value) {
  if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
  if (fake.kernel_handle) return CUDA_ERROR_INVALID_HANDLE;
  fake.attribute_of = f;
  fake.shared_limit = value;
  ++fake.limit_sets;
  return CUDA_SUCCESS;
}
// A CUkernel's, for a device.
CUresult kernel_attribute(int* value, CUfunction_attribute a, CUkernel k, CUdevice dev) {
  if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
  if (!fake.kernel_handle) return CUDA_ERROR_INVALID_HANDLE;
  fake.attribute_of = k;
  fake.device_of = dev;
  *value = fake.shared_limit;
  return CUDA_SUCCESS;
}
CUresult set_kernel_attribute(CUfunction_attribute a, int value, CUkernel k, CUdevice dev) {
  if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
  if (!fake.kernel_handle) return CUDA_ERROR_INVALID_HANDLE;
  fake.attribute_of = k;
  fake.device_of = dev;
  fake.shared_limit = value;
  ++fake.limit_sets;
  return CUDA_SUCCESS;
}
CUresult ctx_get_device(CUdevice* dev) {
  *dev = 3;
  return CUDA_SUCCESS;
}
CUresult device_attribute(int* value, CUdevice_attribute a, CUdevice) {
  *value = a == CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE ? 64 : 2;  // bytes of L2; SMs
  return CUDA_SUCCESS;
}
CUresult stream_is_capturing(CUstream, CUstreamCaptureStatus* status) {
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult launch_ex(const CUlaunchConfig* config, CUfunction f, void** args, void** extra) {
  record(f, config->gridDimX, args, extra);
  fake.attrs.assign(config->attrs, config->attrs + config->numAttrs);
  return CUDA_SUCCESS;
}
CUresult error_name(CUresult r, const char** name) {
  *name = r == CUDA_ERROR_INVALID_HANDLE ? "CUDA_ERROR_INVALID_HANDLE" : "another error";
  return CUDA_SUCCESS;
}
// Memory: the backups are allocations of the fake device too.
CUresult ctx_synchronize() { return CUDA_SUCCESS; }
CUresult mem_info(std::size_t* free, std::size_t* total) {
  *free = fake.free - fake.allocated;
  *total = fake.free;
  return CUDA_SUCCESS;
}
CUresult mem_alloc(CUdeviceptr* p, std::size_t bytes) {
  if (fake.allocated + bytes > fake.free) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = fake.device.size();
  fake.device.resize(fake.device.size() + bytes);
  fake.allocated += bytes;
  fake.allocs.emplace_back(*p, bytes);
  return CUDA_SUCCESS;
}
CUresult mem_free(CUdeviceptr p) {
  for (auto it = fake.allocs.begin(); it != fake.allocs.end(); ++it)
    if (it->first == p) {
      fake.allocated -= it->second;
      fake.allocs.erase(it);
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult copy(CUdeviceptr to, CUdeviceptr from, std::size_t bytes, CUstream) {
  std::memmove(fake.device.data() + to, fake.device.data() + from, bytes);
  ++fake.copies;
  return CUDA_SUCCESS;
}

CUresult copy_to_device(CUdeviceptr to, const void* from, std::size_t bytes) {
  std::memcpy(fake.device.data() + to, from, bytes);
  return CUDA_SUCCESS;
}

CUresult copy_batch(CUdeviceptr* to, CUdeviceptr* from, std::size_t* sizes, std::size_t count,
                    CUmemcpyAttributes* attrs, std::size_t* first, std::size_t attrs_count,
                    CUstream stream) {
  fake.batch_stream = stream;
  if (fake.batch_result != CUDA_SUCCESS) return fake.batch_result;
  if (attrs_count != 1 || first[0] != 0 ||
      attrs[0].srcAccessOrder != CU_MEMCPY_SRC_ACCESS_ORDER_STREAM)
    return CUDA_ERROR_INVALID_VALUE;
  for (std::size_t i = 0; i < count; ++i)
    std::memmove(fake.device.data() + to[i], fake.device.data() + from[i], sizes[i]);
  ++fake.batches;
  fake.batched += static_cast<int>(count);
  return CUDA_SUCCESS;
}

Driver fake_driver() {
  fake = Fake{};
  Driver d;
  d.param_info = param_info;
  d.kernel_param_info = kernel_param_info;
  d.function_load = function_load;
  d.launch = launch;
  d.launch_ex = launch_ex;
  d.function_attribute = function_attribute;
  d.set_function_attribute = set_function_attribute;
  d.kernel_attribute = kernel_attribute;
  d.set_kernel_attribute = set_kernel_attribute;
  d.ctx_get_device = ctx_get_device;
  d.device_attribute = device_attribute;
  d.stream_is_capturing = stream_is_capturing;
  d.error_name = error_name;
  d.ctx_synchronize = ctx_synchronize;
  d.mem_info = mem_info;
  d.mem_alloc = mem_alloc;
  d.mem_free = mem_free;
  d.copy = copy;
  d.copy_to_device = copy_to_device;
  d.module_load_data = module_load_data;
  d.module_function = module_function;
  return d;
}

// A kernel's arguments as a caller's frame holds them: a pointer, an int, a
// 24-byte struct aligned to 8.
struct Args {
  std::uint64_t pointer = 0x7f0000001000;
  int n = 1000;
  struct {
    double a, b, c;
  } s{1.5, 2.5, 3.5};
};
const std::vector<std::pair<std::size_t, std::size_t>> args_layout{{0, 8}, {8, 4}, {16, 24}};
std::vector<unsigned char> bytes_of(const Args& a) {
  std::vector<unsigned char> b(40, 0);
  std::memcpy(b.data(), &a.pointer, 8);
  std::memcpy(b.data() + 8, &a.n, 4);
  std::memcpy(b.data() + 16, &a.s, 24);
  return b;
}

// A cuLaunchKernel of Args' layout (set in the fake: after fake_driver()),
// its parameters pointing into its own Args.
struct ArgsLaunch {
  Args a;
  void* args[3] = {&a.pointer, &a.n, &a.s};
  DriverLaunchParams p{};
  ArgsLaunch() {
    fake.layout = args_layout;
    p.kernelParams = args;
  }
  ArgsLaunch(const ArgsLaunch&) = delete;
  std::optional<KeptLaunch> keep(const Driver& driver) {
    std::string why;
    return KeptLaunch::keep(driver, {LaunchCall::kernel, &p}, why);
  }
};

}  // namespace

TEST_CASE("KeptLaunch: the arguments copied, launched again after the caller's frame changed") {
  for (const bool kernel_handle : {false, true}) {
    CAPTURE(kernel_handle);
    Driver driver = fake_driver();
    fake.layout = args_layout;
    fake.kernel_handle = kernel_handle;  // the runtime's launches pass a CUkernel
    Args a;
    void* args[] = {&a.pointer, &a.n, &a.s};
    DriverLaunchParams p{};
    p.f = reinterpret_cast<CUfunction>(0x1234);
    p.gridDimX = 7;
    p.kernelParams = args;
    std::string why;
    auto kept = KeptLaunch::keep(driver, {LaunchCall::kernel, &p}, why);
    REQUIRE(kept.has_value());
    CHECK(why.empty());
    const std::vector<unsigned char> expected = bytes_of(a);
    // The caller's frame reused: other values where the arguments were.
    a = Args{0xdead, -1, {0, 0, 0}};
    p.gridDimX = 1;
    p.kernelParams = nullptr;
    // Moved, as a batch's vector moves its members.
    KeptLaunch moved = std::move(*kept);
    CHECK(moved.launch(driver, nullptr) == CUDA_SUCCESS);
    CHECK(fake.launched == expected);
    CHECK(fake.function == reinterpret_cast<CUfunction>(0x1234));
    CHECK(fake.grid == 7);
  }
}

TEST_CASE("KeptLaunch: each copied argument as aligned as its offset, up to a TMA descriptor's") {
  Driver driver = fake_driver();
  // A pointer, a 128-byte CUtensorMap at offset 128 (alignas(64); 128 in CUDA 13), an int.
  fake.layout = {{0, 8}, {128, 128}, {256, 4}};
  alignas(128) unsigned char frame[512] = {};
  for (std::size_t i = 0; i < sizeof frame; ++i) frame[i] = static_cast<unsigned char>(i);
  void* args[] = {frame, frame + 128, frame + 256};
  DriverLaunchParams p{};
  p.kernelParams = args;
  std::string why;
  auto kept = KeptLaunch::keep(driver, {LaunchCall::kernel, &p}, why);
  REQUIRE(kept.has_value());
  REQUIRE(kept->launch(driver, nullptr) == CUDA_SUCCESS);
  REQUIRE(fake.arg_pointers.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(reinterpret_cast<std::uintptr_t>(fake.arg_pointers[i]) % 128 ==
          fake.layout[i].first % 128);
  }
  CHECK(fake.launched[128] == 128);
  CHECK(fake.launched[255] == 255);
}

TEST_CASE("KeptLaunch: launched again with the dynamic shared memory limit its launch had") {
  // A CUkernel's limit is read and set for the launch's device (as
  // cudaFuncSetAttribute sets it), never through a function of it, whose
  // limit would override the program's from then on.
  for (const bool kernel_handle : {false, true}) {
    CAPTURE(kernel_handle);
    Driver driver = fake_driver();
    fake.kernel_handle = kernel_handle;
    ArgsLaunch l;
    l.p.f = reinterpret_cast<CUfunction>(0x1000);
    l.p.sharedMemBytes = 96 << 10;
    // The library raised the limit for this launch, and lowers it for a later one.
    fake.shared_limit = 96 << 10;
    auto kept = l.keep(driver);
    REQUIRE(kept.has_value());
    CHECK(fake.attribute_of == static_cast<const void*>(l.p.f));
    CHECK(fake.device_of == (kernel_handle ? 3 : -1));
    fake.shared_limit = 32 << 10;
    fake.limit_sets = 0;
    CHECK(kept->launch(driver, nullptr) == CUDA_SUCCESS);
    CHECK(fake.limit_sets == 2);  // raised for the launch, put back after
    CHECK(fake.shared_limit == 32 << 10);
    CHECK(fake.attribute_of == static_cast<const void*>(l.p.f));
    // As it was: nothing set.
    fake.shared_limit = 96 << 10;
    fake.limit_sets = 0;
    CHECK(kept->launch(driver, nullptr) == CUDA_SUCCESS);
    CHECK(fake.limit_sets == 0);
  }
  // A launch without dynamic shared memory asks for no attribute.
  Driver driver = fake_driver();
  ArgsLaunch l;
  auto kept = l.keep(driver);
  REQUIRE(kept.has_value());
  CHECK(kept->launch(driver, nullptr) == CUDA_SUCCESS);
  CHECK(fake.attribute_of == nullptr);
  CHECK(fake.limit_sets == 0);
  // A driver without the CUkernel's attribute calls: the limit is left
  // alone, and a launch over it is refused as the driver refuses it.
  driver = fake_driver();
  driver.kernel_attribute = nullptr;
  fake.kernel_handle = true;
  l.p.sharedMemBytes = 96 << 10;
  fake.shared_limit = 96 << 10;
  kept = l.keep(driver);
  REQUIRE(kept.has_value());
  fake.shared_limit = 32 << 10;
  CHECK(kept->launch(driver, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(fake.limit_sets == 0);
}

TEST_CASE("KeptLaunch: describe() names the kernel, the call and what was copied") {
  Driver driver = fake_driver();
  driver.function_name = [](const char** name, CUfunction) {
    *name = "sm90_xmma_fprop_implicit_gemm";
    return CUDA_SUCCESS;
  };
  ArgsLaunch l;
  auto kept = l.keep(driver);
  REQUIRE(kept.has_value());
  CHECK(kept->describe(driver) ==
        "sm90_xmma_fprop_implicit_gemm (cuLaunchKernel, 0 launch attributes, 3 parameters, 40 "
        "bytes)");
  driver.function_name = nullptr;  // a driver before CUDA 12.3
  CHECK(kept->describe(driver) ==
        "a kernel (cuLaunchKernel, 0 launch attributes, 3 parameters, 40 bytes)");
  CHECK(KeptLaunch::borrow({LaunchCall::kernel, &l.p}).describe(driver) ==
        "a launch replayed from its own call");
}

TEST_CASE("KeptLaunch: cuLaunchKernelEx's configuration and attributes, and `extra` buffers") {
  Driver driver = fake_driver();
  fake.layout = {{0, 8}};
  std::uint64_t pointer = 0x42;
  void* args[] = {&pointer};
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = 2;
  CUlaunchConfig config{};
  config.gridDimX = 64;
  config.attrs = &attr;
  config.numAttrs = 1;
  DriverLaunchExParams ex{&config, reinterpret_cast<CUfunction>(0x99), args, nullptr};
  std::string why;
  auto kept = KeptLaunch::keep(driver, {LaunchCall::kernel_ex, &ex}, why);
  REQUIRE(kept.has_value());
  pointer = 0;
  attr.value.clusterDim.x = 8;
  config.gridDimX = 1;
  CHECK(kept->launch(driver, nullptr) == CUDA_SUCCESS);
  CHECK(fake.grid == 64);
  REQUIRE(fake.attrs.size() == 1);
  CHECK(fake.attrs[0].value.clusterDim.x == 2);
  CHECK(fake.launched == std::vector<unsigned char>{0x42, 0, 0, 0, 0, 0, 0, 0});

  // Arguments packed in one buffer (`extra`), not a pointer per argument.
  unsigned char buffer[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::size_t size = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  DriverLaunchParams p{};
  p.extra = extra;
  auto packed = KeptLaunch::keep(driver, {LaunchCall::kernel, &p}, why);
  REQUIRE(packed.has_value());
  std::memset(buffer, 0, sizeof buffer);
  CHECK(packed->launch(driver, nullptr) == CUDA_SUCCESS);
  CHECK(fake.buffer == std::vector<unsigned char>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  CHECK(fake.launched.empty());
}

TEST_CASE("KeptLaunch: what cannot be kept says why") {
  Driver driver = fake_driver();
  std::uint64_t pointer = 0;
  void* args[] = {&pointer};
  DriverLaunchParams p{};
  p.kernelParams = args;
  std::string why;

  Driver old = driver;  // a driver before CUDA 12.4
  old.param_info = nullptr;
  CHECK_FALSE(KeptLaunch::keep(old, {LaunchCall::kernel, &p}, why).has_value());
  CHECK(why == "the driver has no cuFuncGetParamInfo (CUDA 12.4 and later)");

  // A handle neither a function nor a kernel the driver knows.
  Driver refusing = driver;
  refusing.kernel_param_info = [](CUkernel, std::size_t, std::size_t*, std::size_t*) {
    return CUDA_ERROR_INVALID_HANDLE;
  };
  fake.kernel_handle = true;
  CHECK_FALSE(KeptLaunch::keep(refusing, {LaunchCall::kernel, &p}, why).has_value());
  CHECK(why == "cuKernelGetParamInfo: CUDA_ERROR_INVALID_HANDLE");

  int unknown = 0;
  void* extra[] = {&unknown, nullptr, CU_LAUNCH_PARAM_END};
  p.kernelParams = nullptr;
  p.extra = extra;
  CHECK_FALSE(KeptLaunch::keep(driver, {LaunchCall::kernel, &p}, why).has_value());
  CHECK(why == "a launch's `extra` array holds more than a parameter buffer and its size");
}

TEST_CASE("ReplayMemory: each slot restores its own moment, slots after the first take half") {
  Driver driver = fake_driver();
  fake.free = 1000;
  fake.device.assign(100, 0);  // the program's memory: [0, 100)
  fake.allocated = 100;
  ReplayMemory memory(driver);
  memory.allocations().add(0, 60);
  memory.allocations().add(60, 40);
  auto fill = [](unsigned char v) { std::fill(fake.device.begin(), fake.device.begin() + 100, v); };

  fill(1);
  REQUIRE(memory.save(nullptr, 0));  // 100 bytes, with a quarter to grow: 125 of the 900 free
  CHECK(memory.saved_bytes(0) == 100);
  CHECK(memory.saved_allocations(0) == 2);
  fill(2);
  REQUIRE(memory.save(nullptr, 1));  // 100 and a quarter of the 775 free: at most half
  CHECK(fake.allocs.back().second == 125);
  fill(3);
  memory.restore(nullptr, 0);
  CHECK(fake.device[0] == 1);
  CHECK(fake.device[99] == 1);
  memory.restore(nullptr, 1);
  CHECK(fake.device[0] == 2);
  CHECK(fake.device[99] == 2);

  // A slot after the first needs the memory's size within half of what is free.
  fake.free = fake.allocated + 190;  // 190 free: 95 for a later slot, under the 100 needed
  CHECK_FALSE(memory.reserve(2));
  CHECK(memory.why() ==
        "keeping one more launch's device memory to replay it with others needs 0.00 GiB, more "
        "than half of the 0.00 GiB free");
  CHECK(memory.reserve(1));          // slot 1 already has room
  fake.free = fake.allocated + 200;  // 100 of 200: half, with no room for the quarter
  CHECK(memory.reserve(2));
  CHECK(fake.allocs.back().second == 100);
  CHECK(memory.save(nullptr, 2));

  // The program's memory grows within the quarter: the slots keep their backups.
  CUdeviceptr grown = 0;
  fake.free = fake.allocated + 1020;
  REQUIRE(mem_alloc(&grown, 20) == CUDA_SUCCESS);  // the program's: 120 bytes in all
  memory.allocations().add(grown, 20);
  const std::size_t backups = fake.allocs.size();
  CHECK(memory.reserve(0));
  CHECK(memory.reserve(1));
  CHECK(fake.allocs.size() == backups);
  CHECK(memory.reserve(2));  // 120 over its 100: made again, with its quarter
  CHECK(fake.allocs.back().second == 150);
}

TEST_CASE("ReplayMemory: a module's variables saved and restored by a launch of pasta's kernel") {
  Driver driver = fake_driver();
  fake.free = 1000;
  fake.device.assign(200, 0);  // an allocation [0, 100), a module's variables in [100, 140)
  fake.allocated = 200;
  ReplayMemory memory(driver);
  memory.allocations().add(0, 100);
  for (std::uint64_t v : {100, 108, 116, 120, 136}) memory.variables().add(v, 4);
  std::fill(fake.device.begin(), fake.device.begin() + 200, 1);
  fake.copies = 0;
  REQUIRE(memory.save(nullptr, 0));
  CHECK(fake.copies == 1);  // the allocation; the variables' span by the kernel
  CHECK(fake.span_launches == 1);
  CHECK(memory.saved_bytes(0) == 140);
  CHECK(memory.saved_allocations(0) == 2);
  std::fill(fake.device.begin(), fake.device.begin() + 200, 7);
  CHECK(memory.restore(nullptr, 0));  // the allocation copied, the span by the kernel
  CHECK(fake.copies == 2);
  CHECK(fake.span_launches == 2);
  CHECK(memory.kernel_copies() == 2);
  CHECK(fake.device[0] == 1);
  CHECK(fake.device[99] == 1);
  CHECK(fake.device[100] == 1);
  CHECK(fake.device[139] == 1);  // the last variable's last byte
  CHECK(fake.device[140] == 7);  // past the span: not the program's to restore
  memory.variables().clear();  // a module unloads: its variables leave the saved memory
  REQUIRE(memory.save(nullptr, 0));
  CHECK(memory.saved_bytes(0) == 100);
  CHECK_FALSE(memory.restore(nullptr, 0));  // no variables: no kernel
  CHECK(fake.span_launches == 2);
}

TEST_CASE("ReplayMemory: many spans restored by one launch, each at its own moment per slot") {
  Driver driver = fake_driver();
  fake.free = 4000;
  fake.device.assign(1000, 0);
  fake.allocated = 1000;
  ReplayMemory memory(driver);
  memory.allocations().add(0, 97);  // an odd size: the spans after it are aligned in the backup
  // Five spans over 64 bytes apart, of odd sizes and addresses (byte copies) and even ones.
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> vars{
      {200, 8}, {301, 3}, {400, 64}, {541, 13}, {640, 24}};
  for (auto [base, bytes] : vars) memory.variables().add(base, bytes);
  auto fill = [](unsigned char v) {  // the program's memory, not the backups after it
    std::fill(fake.device.begin(), fake.device.begin() + 1000, v);
  };
  fill(1);
  REQUIRE(memory.save(nullptr, 0));
  fill(2);
  REQUIRE(memory.save(nullptr, 1));
  CHECK(fake.span_launches == 2);  // each save's spans by one launch
  fill(9);
  CHECK(memory.restore(nullptr, 0));
  CHECK(fake.span_launches == 3);
  CHECK(fake.span_grid == 5);  // a block per span
  auto expect_slot = [&](unsigned char v) {
    for (std::uint64_t a = 0; a < 97; ++a) CHECK(fake.device[a] == v);
    CHECK(fake.device[97] == 9);
    for (auto [base, bytes] : vars) {
      CAPTURE(base);
      for (std::uint64_t a = base; a < base + bytes; ++a) CHECK(fake.device[a] == v);
      CHECK(fake.device[base - 1] == 9);
      CHECK(fake.device[base + bytes] == 9);
    }
  };
  expect_slot(1);
  fill(9);
  CHECK(memory.restore(nullptr, 1));
  expect_slot(2);
  // The bytes copied: the allocation and the spans (not the alignment or the rows).
  CHECK(memory.saved_bytes(0) == 97 + 8 + 3 + 64 + 13 + 24);
}

TEST_CASE("ReplayMemory: a pass's variables restored in the L2 flush's launch where they fit") {
  Driver driver = fake_driver();
  constexpr std::size_t program = 20000 + (4u << 20) + 4096;  // the last variable's end, and more
  fake.free = 4 * program;
  fake.device.assign(program, 0);
  fake.allocated = program;
  ReplayMemory memory(driver);
  pasta::nv::detail::L2Flush flush(driver);
  memory.allocations().add(0, 100);
  memory.variables().add(200, 8);
  memory.variables().add(301, 13);
  std::fill(fake.device.begin(), fake.device.begin() + 400, 1);
  REQUIRE(memory.save(nullptr, 0));
  CHECK(fake.span_launches == 1);  // the save's copy kernel
  std::fill(fake.device.begin(), fake.device.begin() + 400, 9);
  ReplayMemory::Rows rows;
  CHECK_FALSE(memory.restore(nullptr, 0, &rows));  // no launch of its own: left to the flush
  CHECK(rows.count == 2);
  CHECK(fake.span_launches == 1);
  CHECK(fake.device[0] == 1);    // the allocation, copied at once
  CHECK(fake.device[200] == 9);  // the variables: not yet
  const auto ctx = reinterpret_cast<CUcontext>(&fake);  // loads the kernel once, in "ctx"
  REQUIRE(flush.flush(ctx, nullptr, rows.table, rows.count));
  CHECK(fake.flushes == 1);
  CHECK(fake.flushed_rows == 2);
  for (std::uint64_t a : {200, 207, 301, 313}) CHECK(fake.device[a] == 1);
  CHECK(fake.device[199] == 9);
  CHECK(fake.device[314] == 9);
  CHECK(memory.kernel_copies() == 2);  // the save's and the restore's, in the flush's launch
  CHECK(memory.copies_with_flush() == 1);
  // A flush that does not come: the rows get the copy kernel's launch.
  std::fill(fake.device.begin(), fake.device.begin() + 400, 9);
  rows = {};
  CHECK_FALSE(memory.restore(nullptr, 0, &rows));
  memory.copy_rows(rows, nullptr);
  CHECK(fake.span_launches == 2);
  CHECK(fake.device[200] == 1);
  CHECK(memory.copies_with_flush() == 1);
  // A variable longer than a row: rows of max_row_bytes, in the flush's launch too.
  constexpr std::uint64_t row = pasta::nv::detail::L2Flush::max_row_bytes;
  memory.variables().add(5000, row + 8);
  std::fill(fake.device.begin(), fake.device.begin() + 10000, 1);
  REQUIRE(memory.save(nullptr, 0));
  std::fill(fake.device.begin(), fake.device.begin() + 10000, 9);
  rows = {};
  CHECK_FALSE(memory.restore(nullptr, 0, &rows));
  CHECK(rows.count == 4);  // the two small variables', and the long one's two
  REQUIRE(flush.flush(ctx, nullptr, rows.table, rows.count));
  for (std::uint64_t a : {std::uint64_t{200}, std::uint64_t{5000}, 5000 + row, 5000 + row + 7})
    CHECK(fake.device[a] == 1);
  CHECK(fake.device[4999] == 9);
  CHECK(fake.device[5000 + row + 8] == 9);
  // More rows than a flush's launch takes: the copy kernel's own launch, nothing left.
  memory.variables().clear();
  memory.variables().add(20000, row * pasta::nv::detail::L2Flush::max_rows + 1);
  REQUIRE(memory.save(nullptr, 0));
  const int launches = fake.span_launches;
  rows = {};
  CHECK(memory.restore(nullptr, 0, &rows));
  CHECK_FALSE(rows);
  CHECK(fake.span_launches == launches + 1);
  CHECK(fake.flushes == 2);
}

TEST_CASE("ReplayMemory: a save's allocations in one batched call where there is one") {
  Driver driver = fake_driver();
  driver.copy_batch = copy_batch;
  fake.free = 1000;
  fake.device.assign(400, 0);
  fake.allocated = 400;
  ReplayMemory memory(driver);
  memory.allocations().add(0, 60);
  memory.allocations().add(60, 40);
  for (std::uint64_t v : {150, 250, 350}) memory.variables().add(v, 4);  // 96 bytes apart: 3 spans
  std::fill(fake.device.begin(), fake.device.begin() + 400, 1);
  REQUIRE(memory.save(nullptr, 0));
  CHECK(fake.batches == 1);
  CHECK(fake.batched == 2);  // the allocations; the spans by the kernel
  CHECK(fake.span_launches == 1);
  CHECK(fake.copies == 0);
  CHECK(fake.batch_stream == CU_STREAM_PER_THREAD);  // not the legacy NULL stream
  CHECK(memory.batched() == 1);
  std::fill(fake.device.begin(), fake.device.begin() + 400, 7);
  memory.restore(nullptr, 0);  // never batched: it may run inside a replay pass
  CHECK(fake.batches == 1);
  CHECK(fake.copies == 2);
  CHECK(fake.span_launches == 2);
  CHECK(fake.device[0] == 1);
  CHECK(fake.device[99] == 1);
  CHECK(fake.device[250] == 1);
  CHECK(fake.device[353] == 1);
  CHECK(fake.device[354] == 7);  // between spans and past them: not copied
  CHECK(fake.device[200] == 7);

  // A driver that refuses the batch: one copy each, from then on.
  fake.batch_result = CUDA_ERROR_NOT_SUPPORTED;
  std::fill(fake.device.begin(), fake.device.begin() + 400, 3);
  REQUIRE(memory.save(nullptr, 0));
  CHECK(fake.copies == 4);
  fake.batch_result = CUDA_SUCCESS;
  REQUIRE(memory.save(nullptr, 0));
  CHECK(fake.batches == 1);
  CHECK(fake.copies == 6);
  std::fill(fake.device.begin(), fake.device.begin() + 400, 7);
  memory.restore(nullptr, 0);
  CHECK(fake.device[0] == 3);
  CHECK(fake.device[353] == 3);

  // Another error is the driver's answer to the copy itself: it is thrown,
  // naming the range.
  ReplayMemory other(driver);
  other.allocations().add(0, 100);
  other.allocations().add(100, 20);
  fake.batch_result = CUDA_ERROR_ILLEGAL_ADDRESS;
  CHECK_THROWS_WITH(other.save(nullptr, 0), "saving device memory: another error");
}

TEST_CASE("ReplayMemory: a copy the driver refuses names its range") {
  Driver driver = fake_driver();
  driver.copy = [](CUdeviceptr, CUdeviceptr from, std::size_t, CUstream) {
    return from == 0x10 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
  };
  fake.free = 1000;
  fake.device.assign(100, 0);
  fake.allocated = 100;
  ReplayMemory memory(driver);
  memory.allocations().add(0x10, 64);
  CHECK_THROWS_WITH(memory.save(nullptr, 0),
                    "saving device memory (64 bytes at 0x10, an allocation): another error");
}

namespace {
// CUPTI's own name for a runtime or driver call, from its callback table (no GPU needed).
std::string callback_name(CUpti_CallbackDomain domain, CUpti_CallbackId id) {
  const char* n = nullptr;
  REQUIRE(cuptiGetCallbackName(domain, id, &n) == CUPTI_SUCCESS);
  return std::string(n);
}
std::string runtime_name(CUpti_CallbackId id) {
  return callback_name(CUPTI_CB_DOMAIN_RUNTIME_API, id);
}
std::string driver_name(CUpti_CallbackId id) {
  return callback_name(CUPTI_CB_DOMAIN_DRIVER_API, id);
}
}  // namespace

TEST_CASE("interrupt_kind: the host's waits replay a batch, asynchronous copies and memsets do not") {
  using pasta::nv::detail::interrupt_kind;
  const std::string sync_copy = runtime_name(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020);
  const std::string async_copy = runtime_name(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020);
  CHECK(sync_copy == "cudaMemcpy_v3020");
  CHECK(interrupt_kind(sync_copy, true) == 'c');
  CHECK(interrupt_kind(async_copy, true) == 'y');
  CHECK(interrupt_kind(driver_name(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2), true) == 'c');
  CHECK(interrupt_kind(driver_name(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2), true) == 'y');
  CHECK(interrupt_kind(runtime_name(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020), true) ==
        'c');
  CHECK(interrupt_kind(runtime_name(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020), true) == 'x');
  CHECK(interrupt_kind(runtime_name(CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020), true) == 'x');
  CHECK(interrupt_kind(runtime_name(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000), true) == 'g');
  CHECK(interrupt_kind(driver_name(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2), true) == 'g');
  // Synchronisations only where launches are kept for batches.
  const std::string stream_sync =
      runtime_name(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000);
  CHECK(interrupt_kind(stream_sync, true) == 's');
  CHECK(interrupt_kind(stream_sync, false) == 0);
  CHECK(interrupt_kind(driver_name(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize), true) == 's');
  // Neither work nor a wait.
  CHECK(interrupt_kind(runtime_name(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000), true) == 0);
  CHECK(interrupt_kind(runtime_name(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020), true) == 0);
  CHECK(interrupt_kind(runtime_name(CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020), true) == 0);
}

TEST_CASE("upload_of: a wait after a copy to the device leaves kept launches kept") {
  using pasta::nv::detail::RuntimeCopyParams;
  using pasta::nv::detail::Upload;
  using pasta::nv::detail::upload_of;
  using pasta::nv::detail::uploads;
  // The runtime's copies say their direction in their kind (PyTorch passes
  // cudaMemcpyHostToDevice); the driver's in their name.
  for (auto id :
       {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000})
    CHECK(upload_of(runtime_name(id)) == Upload::by_kind);
  for (auto id :
       {CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoA_v2})
    CHECK(upload_of(driver_name(id)) == Upload::by_name);
  // Reads, copies on the device, copies of no named direction and waits: no upload.
  for (auto id :
       {CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpy, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
        CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize})
    CHECK(upload_of(driver_name(id)) == Upload::no);
  for (auto id : {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020,
                  CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020,
                  CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
                  CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020})
    CHECK(upload_of(runtime_name(id)) == Upload::no);

  RuntimeCopyParams copy{nullptr, nullptr, 64, cudaMemcpyHostToDevice};
  CHECK(uploads(Upload::by_kind, &copy));
  for (cudaMemcpyKind other : {cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice, cudaMemcpyDefault,
                               cudaMemcpyHostToHost}) {
    copy.kind = other;
    CHECK_FALSE(uploads(Upload::by_kind, &copy));
  }
  CHECK_FALSE(uploads(Upload::by_kind, nullptr));
  CHECK(uploads(Upload::by_name, nullptr));
  CHECK_FALSE(uploads(Upload::no, &copy));
}
