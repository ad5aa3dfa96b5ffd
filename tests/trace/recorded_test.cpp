// Replays traces recorded on an H100 (tests/data/README.md says how) and
// checks what the tools make of them, to the nanosecond. Expected values come
// from the programs that were recorded (their known launch and access counts)
// or from the trace itself by a plain TraceReader pass (truth.hpp), never
// from what a tool once printed.
#include <doctest/doctest.h>

#include <pasta/pasta.hpp>
#include <pasta/trace.hpp>

#include "../support.hpp"
#include "truth.hpp"

using namespace pasta;

namespace {
std::string data(std::string_view file) { return detail::join_path(PASTA_TEST_DATA_DIR, file); }

Config replaying(const test::TempDir& dir, std::string_view file) {
  Config c = test::quiet(dir);
  c.trace_file = data(file);
  return c;
}

using Replayed = Profiler<Replay, proc::Cpu, tools::KernelFreq, tools::EventCount>;

// EventCount counted every kind as often as the trace holds it.
void check_event_counts(const tools::EventCount& n, const test::TraceEvents& truth) {
  for (std::size_t k = 0; k <= detail::event_type_count; ++k) {
    const auto kind = static_cast<EventKind>(k);
    CAPTURE(k);
    CHECK(n.count(kind) == truth.count(kind));
  }
}
}  // namespace

TEST_CASE("the CUDA example recorded on an H100: exact launches per kernel") {
  test::TempDir dir;
  Replayed r(replaying(dir, "launches_h100.pasta"));
  REQUIRE(r.handler().complete());
  const auto& f = r.tool<tools::KernelFreq>();
  // examples/cuda/launches.cu --threads 4 --per-thread 10
  CHECK(f.stats("_Z4fillPffi")->calls() == 1 + 4);
  CHECK(f.stats("_Z5saxpyfPKfPfi")->calls() == 100 + 4 * 10);
  CHECK(f.stats("_Z5scalePffi")->calls() == 50);
  CHECK(f.stats("_Z6reducePKfPdi")->calls() == 10);
  const auto truth = test::TraceEvents(data("launches_h100.pasta"));
  const auto kernels = test::kernels_of(truth);
  for (const auto& [kernel, k] : kernels) {
    CAPTURE(kernel);
    REQUIRE(f.stats(kernel));
    CHECK(f.stats(kernel)->timed == k.completes);
    CHECK(f.stats(kernel)->total_ns == k.device_ns);
  }
  CHECK(kernels.at("_Z5saxpyfPKfPfi").completes == 140);  // every launch ran and was timed
  check_event_counts(r.tool<tools::EventCount>(), truth);
  // What the program did: 11 cudaMalloc and cudaFree, one module.
  CHECK(truth.count(EventKind::device_info) == 1);
  CHECK(truth.count(EventKind::kernel_complete) == 1 + 4 + 100 + 40 + 50 + 10);
  CHECK(truth.count(EventKind::module_load) == 1);
}

TEST_CASE("the writing-a-tool example's numbers, from the trace by a sweep over kernel ends") {
  // docs/examples/gpu_idle.cpp prints these for launches_h100.pasta, and the
  // docs test (tests/CMakeLists.txt) checks it does: busy is the union of each
  // stream's kernel intervals, idle the rest of the stream's first-to-last span.
  const test::TraceEvents truth(data("launches_h100.pasta"));
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<std::pair<std::uint64_t, std::uint64_t>>>
      streams;
  truth.each<KernelComplete>([&](const KernelComplete& e) {
    if (e.start_ns && e.end_ns >= e.start_ns)
      streams[{e.device, e.stream}].push_back({e.start_ns, e.end_ns});
  });
  std::uint64_t busy = 0, idle = 0;
  for (const auto& [stream, spans] : streams) {
    std::uint64_t first = UINT64_MAX, last = 0;
    for (const auto& [b, e] : spans) first = std::min(first, b), last = std::max(last, e);
    const std::uint64_t covered = test::covered_ns(spans);
    busy += covered;
    idle += last - first - covered;
  }
  CHECK(streams.size() == 5);
  CHECK(busy == 730674);  // ns: the docs test's "busy (us): 730.674"
  CHECK(idle == 924321);  // ns: its "idle between kernels (us): 924.321"
}

TEST_CASE("the trace names the GPU it was recorded on") {
  trace::TraceReader reader(data("launches_h100.pasta"));
  std::vector<DeviceInfo> devices;
  reader.read_all([&](const auto& e) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(e)>, DeviceInfo>)
      devices.push_back(e);
  });
  REQUIRE(devices.size() == 1);
  CHECK(name_of(devices[0].name) == "NVIDIA H100 80GB HBM3");
  CHECK(devices[0].cc_major == 9);
  CHECK(devices[0].sm_count == 132);
}

TEST_CASE("a PyTorch ResNet-18 training step recorded on an H100") {
  test::TempDir dir;
  Replayed r(replaying(dir, "resnet18_step_h100.pasta"));
  REQUIRE(r.handler().complete());
  const auto truth = test::TraceEvents(data("resnet18_step_h100.pasta"));
  check_event_counts(r.tool<tools::EventCount>(), truth);
  CHECK(truth.count(EventKind::kernel_launch) == truth.count(EventKind::kernel_complete));
  Report report("kernel_freq");
  r.tool<tools::KernelFreq>().report(report);
  const auto summary = test::summary(report);
  CHECK(std::get<std::uint64_t>(summary.at("kernels")) == test::kernels_of(truth).size());
  CHECK(std::get<std::uint64_t>(summary.at("launches")) ==
        truth.count(EventKind::kernel_complete));
}

TEST_CASE("memory accesses recorded on an H100 (GpuBucketing histograms): exact per buffer") {
  // examples/cuda/access_pattern.cu under `pasta run --memory --record`: its
  // buffers a, b, out, c, last follow a 512-byte allocation the CUDA runtime
  // makes at start-up.
  test::TempDir dir;
  Profiler<Replay, proc::Cpu, tools::MemHotness> r(replaying(dir, "access_pattern_h100.pasta"));
  REQUIRE(r.handler().complete());
  const auto& objects = r.tool<tools::MemHotness>().objects();
  REQUIRE(objects.size() == 6);
  CHECK(objects[0].bytes == 512);
  const std::uint64_t n = 1 << 20;
  auto counts = [&](std::size_t i) {
    const AccessCounts c = objects[i].total();
    return std::array<std::uint64_t, 3>{c.reads, c.writes, c.bytes()};
  };
  CHECK(counts(1) == std::array<std::uint64_t, 3>{n / 2 + 256 * 100, n, 4 * (n / 2 + 25600 + n)});
  CHECK(counts(2) == std::array<std::uint64_t, 3>{0, n / 2, 4 * (n / 2)});
  CHECK(counts(3) == std::array<std::uint64_t, 3>{0, 512, 2048});  // hot_page + stage
  CHECK(counts(4) == std::array<std::uint64_t, 3>{n, n, 8 * n});   // atomics: read and write
  CHECK(counts(5) == std::array<std::uint64_t, 3>{0, 0, 0});
  CHECK(counts(0) == std::array<std::uint64_t, 3>{0, 0, 0});
  CHECK(objects[1].pages.touched() == 64);
  CHECK(objects[1].pages.get(0).reads == 16384 + 25600);
}

TEST_CASE("managed memory recorded on an H100: UvmHotness pages, working set and advice") {
  // examples/cuda/uvm_advice.cu --mb 64: x and y, 1024 pages of 64 KiB each.
  test::TempDir dir;
  Profiler<Replay, proc::Cpu, tools::UvmHotness> r(replaying(dir, "uvm_advice_h100.pasta"));
  REQUIRE(r.handler().complete());
  const auto& managed = r.tool<tools::UvmHotness>().managed();
  REQUIRE(managed.size() == 2);
  const std::uint64_t n = (64 << 20) / 4;
  for (const auto& m : managed) {
    CHECK(m.page_count == 1024);
    CHECK(m.touched_pages == 1024);
    CHECK(m.first_ordinal == 0);
    CHECK(std::string(name_of(m.first_kernel)).starts_with("_Z4initPfS_m"));
  }
  CHECK(managed[0].accesses == 4 * n);  // x: written by init, read by 3 axpy
  CHECK(managed[1].accesses == 7 * n);  // y: written by init, read and written by 3 axpy
  Report report("uvm_hotness");
  r.tool<tools::UvmHotness>().report(report);
  CHECK(std::get<std::uint64_t>(report.summary().at(3).second) == 2 * (64ull << 20));
}

TEST_CASE("a ResNet-18 training step recorded with torch::Aten on an H100: operators and tensors") {
  test::TempDir dir;
  Profiler<Replay, proc::Cpu, tools::OpSummary, tools::TensorAlloc> r(
      replaying(dir, "resnet18_torch_h100.pasta"));
  REQUIRE(r.handler().complete());
  const auto& ops = r.tool<tools::OpSummary>();
  const auto truth = test::TraceEvents(data("resnet18_torch_h100.pasta"));
  const auto want = test::ops_of(truth);
  // tests/gpu/torch_model.py --steps 1: every kernel carries its operator.
  CHECK(want.kernels_without_op == 0);
  CHECK(ops.attributed() == want.kernels_with_op);
  CHECK(ops.unattributed() == 0);
  // Every operator, by name: calls, kernels, device time self and total. (20
  // convolutions: cudnn_convolution launches their kernels, convolution gets
  // them as total; ConvolutionBackward0's total holds the kernels of the
  // operators under it.)
  for (const auto& [op, w] : want.ops) {
    CAPTURE(op);
    const auto* s = ops.stats(op);
    REQUIRE(s);
    CHECK(s->calls == w.calls);
    CHECK(s->kernels == w.kernels);
    CHECK(s->device_self_ns == w.self_ns);
    CHECK(s->device_total_ns == w.total_ns);
  }
  // What the program did: one ResNet-18 step of 20 convolutions, one SGD step.
  CHECK(want.ops.at("aten::cudnn_convolution").calls == 20);
  CHECK(want.ops.at("aten::convolution_backward").calls == 20);
  CHECK(want.ops.at("Optimizer.step#SGD.step").calls == 1);
  CHECK(want.ops.at("aten::convolution").total_ns == want.ops.at("aten::cudnn_convolution").total_ns);

  // Live tensor bytes, summed over the allocator's own events, and the
  // allocator's count, at the peak.
  std::uint64_t live = 0, peak = 0, peak_op = 0, allocator_peak = 0, allocations = 0, frees = 0;
  std::map<std::uint64_t, std::string> op_names;
  truth.each<OpBegin>([&](const OpBegin& e) { op_names[e.id] = name_of(e.name); });
  for (const auto& e : truth.events) {
    if (const auto* a = std::get_if<TensorAlloc>(&e); a && a->device == 0) {
      ++allocations;
      live += a->bytes;
      allocator_peak = std::max(allocator_peak, a->total_allocated);
      if (live > peak) peak = live, peak_op = a->op;
    } else if (const auto* f = std::get_if<TensorFree>(&e); f && f->device == 0) {
      ++frees;
      live -= f->bytes;
    }
  }
  const auto* gpu = r.tool<tools::TensorAlloc>().device_stats(0);
  REQUIRE(gpu);
  CHECK(gpu->peak_bytes == peak);
  CHECK(gpu->allocator_peak == allocator_peak);
  CHECK(peak == allocator_peak);  // pasta's sum agrees with the allocator's own count
  CHECK(gpu->allocations == allocations);
  CHECK(gpu->frees == frees);
  CHECK(name_of(gpu->peak_op) == op_names.at(peak_op));
}
