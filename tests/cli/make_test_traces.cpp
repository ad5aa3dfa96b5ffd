// Writes the small traces the pasta-trace command tests read: a whole one,
// one cut off, and one with a flipped bit.
#include <cstdio>
#include <string>

#include <pasta/core/detail/files.hpp>
#include <pasta/core/metrics.hpp>
#include <pasta/trace/writer.hpp>

using namespace pasta;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  if (auto why = detail::make_dirs(dir); !why.empty()) {
    std::fprintf(stderr, "cannot create %s: %s\n", dir.c_str(), why.c_str());
    return 1;
  }
  const std::string small = detail::join_path(dir, "small.pasta");
  {
    trace::TraceWriter w;
    if (auto why = w.open(small, {{"command", "make_test_traces"}}); !why.empty()) {
      std::fprintf(stderr, "%s\n", why.c_str());
      return 1;
    }
    w.write(DeviceInfo{.device = 0,
                       .name = intern("Test GPU"),
                       .cc_major = 9,
                       .sm_count = 4,
                       .global_mem_bytes = 1ull << 30});
    w.write(MemAlloc{.address = 0x1000, .bytes = 4096, .mem_kind = MemKind::device});
    for (std::uint64_t i = 1; i <= 3; ++i) {
      const NameId k = intern(i == 3 ? "scale" : "vecAdd");
      w.write(KernelLaunch{.correlation = i, .name = k, .grid = {16, 1, 1}, .block = {256, 1, 1}});
      w.write(KernelComplete{.correlation = i,
                             .name = k,
                             .grid = {16, 1, 1},
                             .block = {256, 1, 1},
                             .start_ns = 1000 * i,
                             .end_ns = 1000 * i + 250});
    }
    w.write(MemAccess{.correlation = 1, .address = 0x1010, .bytes = 4, .flags = access::read});
    w.write(MemFree{.address = 0x1000});
  }
  const std::string whole = detail::read_file(small);
  std::string flipped = whole;
  flipped[whole.size() - 40] ^= 1;  // inside the last data block's payload
  if (!detail::write_file(detail::join_path(dir, "cut.pasta"), whole.substr(0, whole.size() - 16))
           .empty() ||
      !detail::write_file(detail::join_path(dir, "flipped.pasta"), flipped).empty())
    return 1;
  // Operators, kernels and their counters: the per-operator profile
  // (tools::OpCounters) that tests/cli/op_profile_test.py checks against
  // docs/schema/op_profile.v1.json.
  {
    trace::TraceWriter w;
    if (auto why =
            w.open(detail::join_path(dir, "counters.pasta"), {{"command", "make_test_traces"}});
        !why.empty()) {
      std::fprintf(stderr, "%s\n", why.c_str());
      return 1;
    }
    w.write(OpBegin{.id = 1, .name = intern("aten::linear"), .thread = 1});
    w.write(OpBegin{.id = 2, .parent = 1, .name = intern("aten::addmm"), .thread = 1, .depth = 1});
    const NameId gemm = intern("sm90_xmma_gemm"), add = intern("vecAdd");
    for (std::uint64_t i = 1; i <= 3; ++i)
      w.write(KernelComplete{.correlation = 10 + i,
                             .name = gemm,
                             .grid = {132, 1, 1},
                             .block = {384, 1, 1},
                             .start_ns = 1000 * i,
                             .end_ns = 1000 * i + 400,
                             .op = 2});
    // Measured under CUPTI's kernel replay (PASTA_COUNTER_REPLAY=cupti).
    w.write(KernelCounters{.correlation = 11,
                           .passes = 8,
                           .dram_bytes_read = 3 << 20,
                           .dram_bytes_write = 1 << 20,
                           .dram_throughput_pct = 71.5,
                           .sm_throughput_pct = 88,
                           .l1_hit_rate_pct = 12,
                           .l2_hit_rate_pct = 64,
                           .achieved_occupancy_pct = 22,
                           .tensor_active_pct = 81,
                           .inst_executed = 1.5e6,
                           .flops = 6.4e9,
                           .l2_warm_replay = 1});
    w.write(KernelComplete{.correlation = 20, .name = add, .start_ns = 9000, .end_ns = 9100});
    // aten::relu's kernel measured in one pass, cache-sensitive metrics
    // only: the rest of its metrics are null in the profile.
    w.write(OpBegin{.id = 3, .name = intern("aten::relu"), .thread = 1});
    w.write(KernelComplete{.correlation = 30,
                           .name = intern("relu_kernel"),
                           .grid = {64, 1, 1},
                           .block = {256, 1, 1},
                           .start_ns = 10000,
                           .end_ns = 10200,
                           .op = 3});
    KernelCounters one_pass = metrics::from_counters({}, {});
    one_pass.correlation = 30;
    one_pass.passes = 1;
    one_pass.dram_bytes_read = 1 << 20;
    one_pass.dram_bytes_write = 1 << 19;
    one_pass.l2_hit_rate_pct = 50;
    w.write(one_pass);
  }
  std::printf("wrote traces to %s\n", dir.c_str());
  return 0;
}
