// Replays traces recorded on an H100 (tests/data/README.md says how) and
// checks what the tools make of them, to the nanosecond.
#include <doctest/doctest.h>

#include <pasta/pasta.hpp>
#include <pasta/trace.hpp>

#include "../support.hpp"

using namespace pasta;

namespace {
std::string data(std::string_view file) { return detail::join_path(PASTA_TEST_DATA_DIR, file); }

Config replaying(const test::TempDir& dir, std::string_view file) {
  Config c = test::quiet(dir);
  c.trace_file = data(file);
  return c;
}

using Replayed = Profiler<Replay, proc::Cpu, tools::KernelFreq, tools::EventCount>;
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
  CHECK(f.stats("_Z5saxpyfPKfPfi")->timed == 140);
  CHECK(f.stats("_Z5saxpyfPKfPfi")->total_ns == 414031);
  const auto& n = r.tool<tools::EventCount>();
  CHECK(n.count(EventKind::device_info) == 1);
  CHECK(n.count(EventKind::kernel_complete) == 205);
  CHECK(n.count(EventKind::mem_alloc) == 11);
  CHECK(n.count(EventKind::mem_free) == 11);
  CHECK(n.count(EventKind::memcpy) == 5);
  CHECK(n.count(EventKind::memset) == 6);
  CHECK(n.count(EventKind::synchronize) == 9);
  CHECK(n.count(EventKind::module_load) == 1);
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
  const auto& n = r.tool<tools::EventCount>();
  CHECK(n.count(EventKind::kernel_complete) == 752);
  CHECK(n.count(EventKind::kernel_launch) == 752);
  CHECK(n.count(EventKind::mem_alloc) == 1056);
  CHECK(n.count(EventKind::memcpy) == 184);
  CHECK(n.count(EventKind::module_load) == 47);
  Report report("kernel_freq");
  r.tool<tools::KernelFreq>().report(report);
  CHECK(std::get<std::uint64_t>(report.summary()[0].second) == 60);   // kernels
  CHECK(std::get<std::uint64_t>(report.summary()[1].second) == 752);  // launches
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
  // tests/gpu/torch_model.py --steps 1: every kernel carries its operator.
  CHECK(ops.attributed() == 887);
  CHECK(ops.unattributed() == 0);
  struct Want {
    const char* op;
    std::uint64_t calls, kernels, self_ns, total_ns;
  };
  // 20 convolutions: cudnn_convolution launches their kernels, convolution
  // gets them as total; the same for backward, where ConvolutionBackward0's
  // total also holds the kernels of operators under it.
  for (const Want& w : {Want{"aten::convolution", 20, 0, 0, 1282640},
                        Want{"aten::cudnn_convolution", 20, 71, 1282640, 1282640},
                        Want{"aten::addmm", 1, 2, 10465, 10465},
                        Want{"ConvolutionBackward0", 20, 0, 0, 3097244},
                        Want{"aten::convolution_backward", 20, 173, 3064922, 3097244},
                        Want{"Optimizer.step#SGD.step", 1, 0, 0, 229345}}) {
    CAPTURE(w.op);
    const auto* s = ops.stats(w.op);
    REQUIRE(s);
    CHECK(s->calls == w.calls);
    CHECK(s->kernels == w.kernels);
    CHECK(s->device_self_ns == w.self_ns);
    CHECK(s->device_total_ns == w.total_ns);
  }
  // The caching allocator's own count agrees with the sum of the tensors.
  const auto* gpu = r.tool<tools::TensorAlloc>().device_stats(0);
  REQUIRE(gpu);
  CHECK(gpu->peak_bytes == 869336064);
  CHECK(gpu->allocator_peak == 869336064);
  CHECK(gpu->allocations == 606);
  CHECK(gpu->frees == 603);
  CHECK(name_of(gpu->peak_op) == "aten::convolution_backward");
}
