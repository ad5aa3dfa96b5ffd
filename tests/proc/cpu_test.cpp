#include <doctest/doctest.h>

#include <pasta/pasta.hpp>

#include "../support.hpp"

using namespace pasta;

namespace {
// The processor alone, feeding a Collect tool.
struct Rig {
  explicit Rig(Config c = {}) : cpu(c) {}
  proc::Cpu cpu;
  detail::ToolSet<test::Collect> tools{Config{}};
  template <class E>
  void emit(const E& e) {
    cpu.on(e, tools);
  }
  test::Collect& out() { return tools.get<test::Collect>(); }
};
}  // namespace

TEST_CASE("completions get their launch's name, stream and shape by correlation id") {
  Rig rig;
  rig.emit(test::launch(5, "vectorAdd", {256, 1, 1}, {128, 1, 1}));
  rig.emit(test::launch(6, "reduce", {8, 1, 1}, {64, 1, 1}));
  rig.emit(test::complete(6, 100, 200));
  rig.emit(test::complete(5, 300, 450));
  const auto done = rig.out().of<KernelComplete>();
  REQUIRE(done.size() == 2);
  CHECK(name_of(done[0].name) == "reduce");
  CHECK(done[0].grid == Dim3{8, 1, 1});
  CHECK(done[0].stream == 7);
  CHECK(name_of(done[1].name) == "vectorAdd");
  CHECK(done[1].block == Dim3{128, 1, 1});
  CHECK(done[1].end_ns - done[1].start_ns == 150);
}

TEST_CASE("a completion's own fields win over the launch's") {
  Rig rig;
  rig.emit(test::launch(1, "host_name"));
  KernelComplete c = test::complete(1, 1, 2);
  c.name = intern("device_name");
  c.grid = {9, 9, 1};
  rig.emit(c);
  const auto done = rig.out().of<KernelComplete>();
  CHECK(name_of(done[0].name) == "device_name");
  CHECK(done[0].grid == Dim3{9, 9, 1});
}

TEST_CASE("kernel selection drops unselected launches and what they cause") {
  Config c;
  c.kernel_filter = "gemm";
  c.launch_skip = 1;
  Rig rig(c);
  rig.emit(MemAlloc{.address = 0x1000, .bytes = 0x1000});
  rig.emit(test::launch(1, "gemm"));   // skipped
  rig.emit(test::launch(2, "other"));  // filtered out
  rig.emit(test::launch(3, "gemm"));   // selected
  for (std::uint64_t corr = 1; corr <= 3; ++corr) {
    rig.emit(MemAccess{.correlation = corr, .address = 0x1010, .bytes = 4, .flags = access::read});
    rig.emit(AccessHistogram{.correlation = corr, .address = 0x1000, .reads = 1});
    rig.emit(test::complete(corr, 10, 20));
  }
  CHECK(rig.out().of<KernelLaunch>().size() == 1);
  REQUIRE(rig.out().of<KernelComplete>().size() == 1);
  CHECK(rig.out().of<KernelComplete>()[0].correlation == 3);
  REQUIRE(rig.out().of<MemAccess>().size() == 1);
  CHECK(rig.out().of<MemAccess>()[0].correlation == 3);
  CHECK(rig.out().of<AccessHistogram>().size() == 1);
}

TEST_CASE("completions without launch events are selected in completion order") {
  Config c;
  c.launch_count = 2;
  Rig rig(c);
  for (std::uint64_t corr = 1; corr <= 4; ++corr) {
    KernelComplete k = test::complete(corr, 1, 2);
    k.name = intern("k");
    rig.emit(k);
  }
  CHECK(rig.out().of<KernelComplete>().size() == 2);
  Report r("correlation");
  rig.cpu.report(r);
  CHECK(std::get<std::uint64_t>(r.summary()[2].second) == 4);  // without a launch
}

TEST_CASE("memory accesses learn their allocation, misses and bad frees are counted") {
  Rig rig;
  rig.emit(MemAlloc{.address = 0x1000, .bytes = 0x100, .mem_kind = MemKind::managed});
  rig.emit(MemAccess{.address = 0x10ff, .bytes = 1});
  rig.emit(MemAccess{.address = 0x1100, .bytes = 1});
  rig.emit(AccessHistogram{.address = 0x1040, .bin_bytes = 64, .reads = 3});
  rig.emit(MemFree{.address = 0x1000});
  rig.emit(MemFree{.address = 0x5000});
  rig.emit(MemAccess{.address = 0x1000, .bytes = 1});
  const auto acc = rig.out().of<MemAccess>();
  REQUIRE(acc.size() == 3);
  CHECK(acc[0].alloc_base == 0x1000);
  CHECK(acc[1].alloc_base == 0);
  CHECK(acc[2].alloc_base == 0);  // after the free
  CHECK(rig.out().of<AccessHistogram>()[0].alloc_base == 0x1000);
  const auto frees = rig.out().of<MemFree>();
  CHECK(frees[0].bytes == 0x100);  // filled from the allocation
  CHECK(frees[0].mem_kind == MemKind::managed);
  Report r("correlation");
  rig.cpu.report(r);
  std::map<std::string, std::uint64_t> s;
  for (const auto& [k, v] : r.summary()) s[k] = std::get<std::uint64_t>(v);
  CHECK(s["accesses outside any known allocation"] == 2);
  CHECK(s["frees of unknown addresses"] == 1);
  CHECK(s["live allocations"] == 0);
}

TEST_CASE("the processor asks only for what its tools need") {
  using Tools = detail::ToolSet<tools::KernelFreq>;
  static_assert(proc::Cpu::wants<Tools, KernelLaunch>());
  static_assert(!proc::Cpu::wants<Tools, MemAlloc>());
  using Mem = detail::ToolSet<tools::MemHotness>;
  static_assert(proc::Cpu::wants<Mem, MemAlloc>());
  static_assert(proc::Cpu::wants<Mem, KernelLaunch>());
  static_assert(!proc::Cpu::wants<Mem, KernelComplete>());
}
