#include <doctest/doctest.h>

#include <pasta/pasta.hpp>
#include <pasta/tools/stall_blame.hpp>

#include "../support.hpp"

using namespace pasta;

namespace {
using Tools = detail::ToolSet<tools::MemHotness>;

// Keeps the per-instruction counts it is given.
struct Counts {
  static constexpr std::string_view name = "counts";
  std::vector<PcAccessCount> seen;
  void on(const PcAccessCount& e) { seen.push_back(e); }
  void report(Report&) const {}
};
}  // namespace

TEST_CASE("GpuBucketing asks handlers for device histograms, never for raw accesses") {
  // What nv::Sanitizer reads to pick its device patch: histograms here...
  CHECK_FALSE(proc::GpuBucketing::wants<Tools, MemAccess>());
  CHECK(proc::GpuBucketing::wants<Tools, AccessHistogram>());
  CHECK(proc::GpuBucketing::wants<Tools, MemAlloc>());
  CHECK(proc::GpuBucketing::wants<Tools, KernelLaunch>());
  // ...and raw records for proc::Cpu, the host-side baseline.
  CHECK(proc::Cpu::wants<Tools, MemAccess>());
}

TEST_CASE("histogram bins from the device and raw accesses give the same hotness") {
  test::TempDir dir;
  Config cfg = test::quiet(dir);
  cfg.page_bytes = 4096;
  cfg.output_dir.clear();  // no picture
  // One kernel: 3 reads of page 0 and 2 writes of page 1 of a buffer, and one
  // read outside every allocation.
  auto feed_common = [](auto& p, auto& tools) {
    p.on(MemAlloc{.address = 0x10000, .bytes = 8192, .mem_kind = MemKind::device}, tools);
    p.on(test::launch(1, "k", {1, 1, 1}, {32, 1, 1}), tools);
  };
  proc::GpuBucketing gpu(cfg);
  Tools gpu_tools(cfg);
  feed_common(gpu, gpu_tools);
  gpu.on(AccessHistogram{.correlation = 1, .address = 0x10000, .alloc_base = 0x10000,
                         .bin_bytes = 4096, .reads = 3, .read_bytes = 12},
         gpu_tools);
  gpu.on(AccessHistogram{.correlation = 1, .address = 0x11000, .alloc_base = 0x10000,
                         .bin_bytes = 4096, .writes = 2, .write_bytes = 16},
         gpu_tools);
  gpu.on(AccessHistogram{.correlation = 1, .reads = 1, .read_bytes = 4}, gpu_tools);  // catch-all

  proc::Cpu cpu(cfg);
  Tools cpu_tools(cfg);
  feed_common(cpu, cpu_tools);
  for (int i = 0; i < 3; ++i)
    cpu.on(MemAccess{.correlation = 1, .address = 0x10000 + 4u * i, .bytes = 4,
                     .flags = access::read},
           cpu_tools);
  for (int i = 0; i < 2; ++i)
    cpu.on(MemAccess{.correlation = 1, .address = 0x11000 + 8u * i, .bytes = 8,
                     .flags = access::write},
           cpu_tools);
  cpu.on(MemAccess{.correlation = 1, .address = 0x90000, .bytes = 4, .flags = access::read},
         cpu_tools);

  for (Tools* t : {&gpu_tools, &cpu_tools}) {
    const auto& h = t->get<tools::MemHotness>();
    REQUIRE(h.objects().size() == 1);
    const auto& o = h.objects()[0];
    CHECK(o.pages.get(0).reads == 3);
    CHECK(o.pages.get(0).read_bytes == 12);
    CHECK(o.pages.get(1).writes == 2);
    CHECK(o.pages.get(1).write_bytes == 16);
    CHECK(h.unattributed().reads == 1);
  }
}

TEST_CASE("per-instruction counts: GpuBucketing asks the device for them, Cpu makes them of raw accesses") {
  using Blame = detail::ToolSet<tools::StallBlame>;
  // GpuBucketing: counts reduced on the device, no raw record.
  CHECK_FALSE(proc::GpuBucketing::wants<Blame, MemAccess>());
  CHECK(proc::GpuBucketing::wants<Blame, PcAccessCount>());
  CHECK(proc::GpuBucketing::wants<Blame, KernelLaunch>());
  CHECK_FALSE(proc::GpuBucketing::wants<Blame, AccessHistogram>());
  // Cpu: raw records, each a count of one.
  CHECK(proc::Cpu::wants<Blame, MemAccess>());

  test::TempDir dir;
  const Config cfg = test::quiet(dir);
  proc::Cpu cpu(cfg);
  detail::ToolSet<Counts> tools(cfg);
  cpu.on(test::launch(1, "k", {1, 1, 1}, {32, 1, 1}), tools);
  cpu.on(MemAccess{.correlation = 1, .address = 0x1040, .pc = 0x230, .bytes = 8,
                   .flags = access::write, .space = MemSpace::global},
         tools);
  const auto& seen = tools.get<Counts>().seen;
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].correlation == 1);
  CHECK(seen[0].address == 0x1040);
  CHECK(seen[0].pc == 0x230);
  CHECK(seen[0].count == 1);
  CHECK(seen[0].bytes == 8);
  CHECK(seen[0].flags == access::write);
}
