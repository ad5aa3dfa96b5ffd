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
