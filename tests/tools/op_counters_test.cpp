#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

#include <pasta/core/concepts.hpp>
#include <pasta/core/detail/files.hpp>
#include <pasta/tools/op_counters.hpp>

#include "../support.hpp"

using namespace pasta;
using test::cell;

static_assert(Tool<tools::OpCounters>);

namespace {
OpBegin op(std::uint64_t id, std::uint64_t parent, std::string_view name) {
  return {.id = id, .parent = parent, .name = intern(name), .thread = 1};
}
KernelComplete kernel(std::uint64_t correlation, std::string_view name, Dim3 grid, std::uint64_t op,
                      std::uint64_t ns) {
  return {.correlation = correlation,
          .name = intern(name),
          .grid = grid,
          .block = {128, 1, 1},
          .start_ns = 1000,
          .end_ns = 1000 + ns,
          .op = op};
}
KernelCounters counters(std::uint64_t correlation, double read, double write, double dram_pct,
                        double flops) {
  return {.correlation = correlation,
          .passes = 1,
          .dram_bytes_read = read,
          .dram_bytes_write = write,
          .dram_throughput_pct = dram_pct,
          .sm_throughput_pct = 80,
          .l1_hit_rate_pct = 20,
          .l2_hit_rate_pct = 60,
          .achieved_occupancy_pct = 40,
          .tensor_active_pct = 70,
          .inst_executed = 2000,
          .flops = flops};
}

// A linear layer (addmm under linear) launching one GEMM three times, two of
// them measured; the same GEMM on another grid, a relu, and a kernel
// outside every operator.
void feed(tools::OpCounters& t) {
  t.on(op(1, 0, "aten::linear"));
  t.on(op(2, 1, "aten::addmm"));
  t.on(op(3, 0, "aten::relu"));
  t.on(counters(10, 1000, 500, 50, 3000));  // counters may come before the completion
  t.on(kernel(10, "gemm", {4, 1, 1}, 2, 1000));
  t.on(kernel(11, "gemm", {4, 1, 1}, 2, 3000));
  t.on(counters(11, 2000, 500, 70, 9000));
  t.on(kernel(12, "gemm", {4, 1, 1}, 2, 2000));  // not measured: propagated
  t.on(kernel(13, "gemm", {8, 1, 1}, 2, 700));   // another signature, never measured
  t.on(kernel(20, "relu_kernel", {8, 1, 1}, 3, 500));
  t.on(kernel(30, "vec_add", {1, 1, 1}, 0, 400));
  t.on(counters(30, 100, 100, 10, 0));
  t.on(counters(99, 1, 1, 1, 1));  // of a launch never seen complete
}

std::size_t metric_index(std::string_view key) {
  for (std::size_t m = 0; m < metrics::all.size(); ++m)
    if (metrics::all[m].key == key) return m;
  FAIL("no metric " << key);
  return 0;
}

// A configuration that has the tool write its profile into `dir`.
Config writing_into(const test::TempDir& dir) {
  Config cfg;
  cfg.output_dir = dir.path();
  return cfg;
}

// The profile `t` writes into `dir` when it reports.
nlohmann::json written_profile(const tools::OpCounters& t, const test::TempDir& dir) {
  Report r("op_counters");
  t.report(r);
  return nlohmann::json::parse(detail::read_file(dir.file("op_counters.profile.json")));
}

}  // namespace

TEST_CASE("OpCounters groups launches by signature and gives unmeasured ones the measured mean") {
  test::TempDir dir;
  tools::OpCounters t(writing_into(dir));
  feed(t);
  const auto groups = t.groups();
  REQUIRE(groups.size() == 4);
  const auto& gemm = groups[0];
  CHECK(name_of(gemm.sig.kernel) == "gemm");
  CHECK(name_of(gemm.sig.path) == "aten::linear/aten::addmm");
  CHECK(gemm.launches == 3);
  CHECK(gemm.measured == 2);
  CHECK(gemm.device_ns == 6000);
  auto metric = [](std::string_view key) { return metric_index(key); };
  // Additive: mean of the measured (1500 read, 500 written, 6000 flop) times 3 launches.
  CHECK(tools::OpCounters::total(gemm, metric("dram_bytes_read")) == 4500);
  CHECK(tools::OpCounters::total(gemm, metric("dram_bytes_write")) == 1500);
  CHECK(tools::OpCounters::total(gemm, metric("flops")) == 18000);
  // Rates: weighted by the measured launches' device time, (50*1000 + 70*3000) / 4000.
  CHECK(tools::OpCounters::total(gemm, metric("dram_throughput_pct")) == 65);
  CHECK(tools::OpCounters::total(gemm, metric("l2_hit_rate_pct")) == 60);
  CHECK(groups[1].sig.grid == Dim3{8, 1, 1});
  CHECK(groups[1].measured == 0);
  CHECK_FALSE(metrics::measured(tools::OpCounters::total(groups[1], metric("dram_bytes_read"))));
}

TEST_CASE("OpCounters reports per operator, and writes the versioned profile") {
  test::TempDir dir;
  tools::OpCounters t(writing_into(dir));
  feed(t);
  Report r("op_counters");
  t.report(r);

  auto s = test::summary(r);
  CHECK(std::get<std::uint64_t>(s["kernel launches"]) == 6);
  CHECK(std::get<std::uint64_t>(s["measured"]) == 3);
  CHECK(std::get<std::uint64_t>(s["propagated from a measured launch of the same signature"]) == 1);
  CHECK(std::get<std::uint64_t>(s["without counters"]) == 2);
  CHECK(std::get<std::uint64_t>(s["signatures"]) == 4);
  CHECK(std::get<std::uint64_t>(s["counter records of no completed launch"]) == 1);
  CHECK(r.notes().size() == 2);

  const Table& ops = test::table(r, "operators");
  REQUIRE(ops.rows().size() == 3);  // by path: outside, linear/addmm, relu
  CHECK(cell<std::string>(ops, 0, 0) == "(outside every operator)");
  CHECK(cell<std::string>(ops, 1, 0) == "aten::linear/aten::addmm");
  CHECK(cell<std::uint64_t>(ops, 1, 1) == 4);  // launches
  CHECK(cell<std::uint64_t>(ops, 1, 2) == 2);  // measured
  CHECK(cell<std::uint64_t>(ops, 1, 3) == 1);  // propagated
  CHECK(cell<double>(ops, 1, 4) == doctest::Approx(6700e-6));
  CHECK(cell<double>(ops, 1, 5) == 4500);  // dram_bytes_read
  CHECK(cell<double>(ops, 1, 7) == 65);  // dram_throughput_pct: the unmeasured grid weighs nothing
  CHECK(cell<double>(ops, 1, 15) == 3);  // arithmetic intensity: 18000 flop / 6000 bytes
  CHECK(cell<std::uint64_t>(ops, 2, 2) == 0);

  const auto doc = nlohmann::json::parse(detail::read_file(dir.file("op_counters.profile.json")));
  CHECK(doc["schema"] == "pasta.op_profile");
  CHECK(doc["version"] == "1.1");
  CHECK(doc["metrics"]["dram_bytes_read"]["ncu"] == "dram__bytes_read.sum");
  REQUIRE(doc["operators"].size() == 2);
  const auto& addmm = doc["operators"][0];
  CHECK(addmm["path"] == "aten::linear/aten::addmm");
  CHECK(addmm["operator"] == "aten::addmm");
  CHECK(addmm["metrics"]["flops"] == 18000.0);
  REQUIRE(addmm["kernels"].size() == 2);
  CHECK(addmm["kernels"][0]["grid"] == nlohmann::json({4, 1, 1}));
  CHECK(addmm["kernels"][0]["propagated"] == 1);
  // Launch indices: correlations 10, 11, 12, 13, 20, 30 are launches 0 to 5.
  CHECK(addmm["kernels"][0]["measured_launches"] == nlohmann::json({0, 1}));
  CHECK(addmm["kernels"][1]["measured_launches"] == nlohmann::json::array());
  CHECK(addmm["kernels"][0]["metrics"]["dram_throughput_pct"] == 65.0);
  CHECK(addmm["kernels"][1]["metrics"].is_null());
  CHECK(doc["operators"][1]["metrics"].is_null());  // relu: nothing measured
  REQUIRE(doc["unattributed"].size() == 1);
  CHECK(doc["unattributed"][0]["kernel"] == "vec_add");
  CHECK(doc["unattributed"][0]["metrics"]["dram_bytes_write"] == 100.0);
  CHECK(doc["unattributed"][0]["measured_launches"] == nlohmann::json({5}));
  CHECK(doc["warnings"].size() == 2);
}

TEST_CASE("OpCounters says so when the profile cannot be written") {
  Config cfg;
  cfg.output_dir = "/proc/pasta-cannot-write-here";
  tools::OpCounters t(cfg);
  feed(t);
  Report r("op_counters");
  t.report(r);
  auto s = test::summary(r);
  CHECK(s.count("error") == 1);
  CHECK(s.count("profile") == 0);
}

TEST_CASE("OpCounters averages the rates of untimed launches (kernel replay) plainly") {
  test::TempDir dir;
  tools::OpCounters t(writing_into(dir));
  // Under CUPTI's kernel replay the completions carry no device time.
  t.on(kernel(1, "stream", {4, 1, 1}, 0, 0));
  t.on(kernel(2, "stream", {4, 1, 1}, 0, 0));
  t.on(counters(1, 1000, 1000, 40, 0));
  t.on(counters(2, 3000, 1000, 60, 0));
  const auto groups = t.groups();
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].measured == 2);
  const auto& dram_pct = metrics::all[2];
  REQUIRE(dram_pct.key == "dram_throughput_pct");
  CHECK(tools::OpCounters::total(groups[0], 2) == doctest::Approx(50.0));
  CHECK(tools::OpCounters::total(groups[0], 0) == doctest::Approx(4000.0));
}

TEST_CASE("metrics::from_counters sets the fields of the counters given, NaN the others") {
  std::vector<std::size_t> which(metrics::counters.size());
  for (std::size_t i = 0; i < which.size(); ++i) which[i] = i;
  std::vector<double> values(metrics::counters.size(), 0.0);
  values[0] = 4096;  // dram__bytes_read.sum
  values[5] = 300;   // lts__t_sectors_lookup_miss.sum: not part of any field
  values[6] = 1200;  // lts__t_sectors.sum
  values[7] = 900;   // lts__t_sectors_lookup_hit.sum
  values[9] = 12.5;  // sm__pipe_tensor_cycles_active...
  for (std::size_t i = 11; i < values.size(); ++i) values[i] = 10;  // the nine flop parts
  const KernelCounters c = metrics::from_counters(which, values);
  CHECK(c.dram_bytes_read == 4096);
  CHECK(c.dram_bytes_write == 0);
  CHECK(c.l2_hit_rate_pct == 75);  // 100 * 900 / 1200
  CHECK(c.tensor_active_pct == 12.5);
  CHECK(c.flops == 10 * (6 * 1 + 3 * 2));  // adds and muls once, FMAs twice
  // L2's counts in this order: it decides how CUPTI packs the passes (metrics.hpp).
  CHECK(metrics::counters[5].name == "lts__t_sectors_lookup_miss.sum");
  CHECK(metrics::counters[6].name == "lts__t_sectors.sum");
  CHECK(metrics::counters[7].name == "lts__t_sectors_lookup_hit.sum");
  CHECK(metrics::counters[9].name ==
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active");
  // The L2 hit rate is a rate of its counts, the flop count a sum of its.
  CHECK_FALSE(metrics::summed(&KernelCounters::l2_hit_rate_pct));
  CHECK(metrics::summed(&KernelCounters::flops));
  // Every metric of KernelCounters is collected.
  for (const auto& m : metrics::all)
    CHECK(std::any_of(metrics::counters.begin(), metrics::counters.end(),
                      [&](const metrics::Counter& k) { return k.field == m.field; }));

  // A part: DRAM bytes written and the L2 hit rate; the rest not measured.
  const std::vector<std::size_t> part{1, 6, 7};
  const KernelCounters p = metrics::from_counters(part, std::vector<double>{512, 4000, 3000});
  CHECK(p.dram_bytes_write == 512);
  CHECK(p.l2_hit_rate_pct == 75);
  CHECK_FALSE(metrics::measured(p.dram_bytes_read));
  CHECK_FALSE(metrics::measured(p.flops));
  CHECK_FALSE(metrics::measured(metrics::arithmetic_intensity(p)));

  // No hits, all hits, and no L2 traffic at all (0, not a division by 0).
  const std::vector<std::size_t> l2{7, 6};
  CHECK(metrics::from_counters(l2, std::vector<double>{0, 4000}).l2_hit_rate_pct == 0);
  CHECK(metrics::from_counters(l2, std::vector<double>{4000, 4000}).l2_hit_rate_pct == 100);
  CHECK(metrics::from_counters(l2, std::vector<double>{0, 0}).l2_hit_rate_pct == 0);
  // Half of a rate is no rate, the miss count alone least of all.
  const std::vector<std::size_t> hits_only{7};
  CHECK_FALSE(metrics::measured(
      metrics::from_counters(hits_only, std::vector<double>{10}).l2_hit_rate_pct));
  const std::vector<std::size_t> misses_only{5};
  CHECK_FALSE(metrics::measured(
      metrics::from_counters(misses_only, std::vector<double>{10}).l2_hit_rate_pct));
}

TEST_CASE("OpCounters takes each metric from the measurements with the fewest replay passes") {
  test::TempDir dir;
  tools::OpCounters t(writing_into(dir));
  // gemm: measured in full under 9-pass replay (CUPTI's save and restore
  // left L2 dirty: 2 MB written; PASTA_COUNTER_REPLAY=cupti), then again for
  // the cache-sensitive metrics in one pass (nothing written); a third launch
  // is propagated.
  KernelCounters full = counters(1, 1000, 2e6, 50, 3000);
  full.passes = 9;
  full.l2_warm_replay = 1;
  full.l2_hit_rate_pct = 90;
  std::vector<std::size_t> cache;
  for (std::size_t i = 0; i < metrics::counters.size(); ++i)
    if (std::find(metrics::cache_sensitive.begin(), metrics::cache_sensitive.end(),
                  metrics::counters[i].field) != metrics::cache_sensitive.end())
      cache.push_back(i);
  REQUIRE(cache.size() == 7);  // DRAM read, written, throughput; L1; L2 misses, sectors, hits
  KernelCounters clean =
      metrics::from_counters(cache, std::vector<double>{800, 0, 40, 10, 500, 1000, 500});
  clean.correlation = 2;
  clean.passes = 1;
  t.on(kernel(1, "gemm", {4, 1, 1}, 0, 1000));
  t.on(full);
  t.on(kernel(2, "gemm", {4, 1, 1}, 0, 1000));
  t.on(clean);
  t.on(kernel(3, "gemm", {4, 1, 1}, 0, 1000));
  // relu: launched once, measured under replay only.
  KernelCounters once = counters(4, 100, 100, 10, 0);
  once.passes = 9;
  once.l2_warm_replay = 1;
  t.on(kernel(4, "relu", {4, 1, 1}, 0, 500));
  t.on(once);

  const auto groups = t.groups();
  REQUIRE(groups.size() == 2);
  const auto& gemm = groups[0];
  CHECK(gemm.measured == 2);
  CHECK(tools::OpCounters::total(gemm, metric_index("dram_bytes_read")) == 3 * 800);
  CHECK(tools::OpCounters::total(gemm, metric_index("dram_bytes_write")) == 0);
  CHECK(tools::OpCounters::total(gemm, metric_index("l2_hit_rate_pct")) == 50);
  CHECK(tools::OpCounters::total(gemm, metric_index("dram_throughput_pct")) == 40);
  // Only the full measurement has these: its value, for all three launches.
  CHECK(tools::OpCounters::total(gemm, metric_index("flops")) == 3 * 3000);
  CHECK(tools::OpCounters::total(gemm, metric_index("sm_throughput_pct")) == 80);
  CHECK(gemm.values[metric_index("flops")].passes == 9);
  CHECK(gemm.values[metric_index("dram_bytes_write")].passes == 1);

  const auto doc = written_profile(t, dir);
  const auto& k = doc["unattributed"][0];
  CHECK(k["measured"] == 2);
  CHECK(k["propagated"] == 1);
  CHECK(k["metrics"]["dram_bytes_write"] == 0.0);
  CHECK(k["metrics"]["arithmetic_intensity"] == doctest::Approx(9000.0 / 2400));
  REQUIRE(doc["warnings"].size() == 1);
  CHECK(doc["warnings"][0].get<std::string>().starts_with(
      "1 signatures have DRAM bytes and hit rates measured under kernel replay only"));
}

TEST_CASE("OpCounters: under pasta's own replay (L2 flushed before every pass) no replay warning") {
  test::TempDir dir;
  tools::OpCounters t(writing_into(dir));  // PASTA_COUNTER_REPLAY=pasta: l2_warm_replay 0
  KernelCounters once = counters(1, 100, 100, 10, 0);
  once.passes = 9;
  t.on(kernel(1, "relu", {4, 1, 1}, 0, 500));
  t.on(once);
  const auto doc = written_profile(t, dir);
  CHECK(doc["unattributed"][0]["measured"] == 1);
  CHECK(doc["unattributed"][0]["metrics"]["dram_bytes_write"] == 100.0);
  CHECK(doc["warnings"].empty());
}

TEST_CASE("OpCounters numbers measured launches in launch order, not completion order") {
  test::TempDir dir;
  tools::OpCounters t(writing_into(dir));
  // Two streams: launches (correlations) 3, 5, 8, 9 complete as 5, 9, 3, 8.
  t.on(kernel(5, "copy", {2, 1, 1}, 0, 100));
  t.on(kernel(9, "copy", {2, 1, 1}, 0, 100));
  t.on(kernel(3, "scale", {2, 1, 1}, 0, 100));
  t.on(kernel(8, "scale", {2, 1, 1}, 0, 100));
  for (std::uint64_t c : {9, 5, 8}) t.on(counters(c, 10, 10, 1, 0));
  const auto groups = t.groups();
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].measured_launches == std::vector<std::uint64_t>{1, 3});  // copy: 5 and 9
  CHECK(groups[1].measured_launches == std::vector<std::uint64_t>{2});     // scale: 8
  CHECK(written_profile(t, dir)["unattributed"][0]["measured_launches"] ==
        nlohmann::json({1, 3}));
}

TEST_CASE("OpCounters writes null for a metric no measurement collected") {
  test::TempDir dir;
  tools::OpCounters t(writing_into(dir));
  // Only the cache-sensitive pass came back (the full one was lost).
  KernelCounters part =
      metrics::from_counters(std::vector<std::size_t>{0, 1}, std::vector<double>{64, 32});
  part.correlation = 1;
  part.passes = 1;
  t.on(kernel(1, "k", {1, 1, 1}, 0, 100));
  t.on(part);
  Report r("op_counters");
  t.report(r);
  const auto doc = nlohmann::json::parse(detail::read_file(dir.file("op_counters.profile.json")));
  const auto& m = doc["unattributed"][0]["metrics"];
  CHECK(m["dram_bytes_read"] == 64.0);
  CHECK(m["flops"].is_null());
  CHECK(m["arithmetic_intensity"].is_null());
  const Table& ops = test::table(r, "operators");
  REQUIRE(ops.rows().size() == 1);
  CHECK(std::holds_alternative<std::monostate>(ops.rows()[0][14]));  // flops: an empty cell
}

TEST_CASE("the probe's default metric set is pasta's, in pasta's order") {
  // bench/gpu/probe's programs build alone (C++17, no pasta headers), so range_host.hpp keeps
  // a copy of metrics::counters' names; the order matters (it decides CUPTI's pass packing).
  const std::string src =
      detail::read_file(PASTA_TEST_DATA_DIR "/../../bench/gpu/probe/range_host.hpp");
  const auto begin = src.find("default_names[] = {");
  REQUIRE(begin != std::string::npos);
  const auto end = src.find("};", begin);
  REQUIRE(end != std::string::npos);
  std::vector<std::string> probe;
  for (auto q = src.find('"', begin); q < end; q = src.find('"', q + 1)) {
    const auto close = src.find('"', q + 1);
    probe.push_back(src.substr(q + 1, close - q - 1));
    q = close;
  }
  std::vector<std::string> pasta;
  for (const auto& c : metrics::counters) pasta.emplace_back(c.name);
  CHECK(probe == pasta);
}

// The verdicts against numbers computed by hand from the counters fed, and
// the H200's datasheet ceilings (4.8 TB/s, 67 and 989 TFLOP/s).
TEST_CASE("OpCounters ranks operators by what they would save at the GPU's ceilings") {
  test::TempDir dir;
  tools::OpCounters t(writing_into(dir));
  t.on(DeviceInfo{.device = 0, .name = intern("NVIDIA H200")});
  t.on(op(1, 0, "aten::mm"));
  t.on(op(2, 0, "aten::add"));
  t.on(op(3, 0, "aten::relu"));
  // A GEMM: 1 ms, tensor pipes 50% active, SM 70%, DRAM 20%, 1e8 bytes.
  t.on(kernel(10, "gemm", {64, 1, 1}, 1, 1'000'000));
  t.on(KernelCounters{.correlation = 10, .passes = 1, .dram_bytes_read = 6e7,
                      .dram_bytes_write = 4e7, .dram_throughput_pct = 20, .sm_throughput_pct = 70,
                      .tensor_active_pct = 50, .flops = 0});
  // An elementwise add: 200 us moving 0.72 GB at 75% of DRAM's peak.
  t.on(kernel(20, "add", {64, 1, 1}, 2, 200'000));
  t.on(KernelCounters{.correlation = 20, .passes = 1, .dram_bytes_read = 4.8e8,
                      .dram_bytes_write = 2.4e8, .dram_throughput_pct = 75,
                      .sm_throughput_pct = 15, .flops = 6e7});
  // Ten 2 us relus, nothing busy.
  for (std::uint64_t i = 0; i < 10; ++i) {
    t.on(kernel(30 + i, "relu", {1, 1, 1}, 3, 2'000));
    t.on(KernelCounters{.correlation = 30 + i, .passes = 1, .dram_bytes_read = 1e3,
                        .dram_throughput_pct = 2, .sm_throughput_pct = 3, .flops = 0});
  }
  Report r("op_counters");
  t.report(r);
  const auto s = test::summary(r);
  CHECK(std::get<std::string>(s.at("device")) == "NVIDIA H200");
  CHECK(std::get<std::string>(s.at("ceilings")).find("H200 SXM datasheet") != std::string::npos);
  const auto& v = test::table(r, "verdicts");
  REQUIRE(v.rows().size() == 3);
  // GEMM: 0.5 * 989e12 * 1e-3 = 4.945e11 tensor FLOPs, attainable max(1e8 / 4.8e12 = 20.8 us,
  // 4.945e11 / 989e12 = 500 us) = 500 us: saves 500 us. Add: 7.2e8 / 4.8e12 = 150 us
  // attainable (FLOPs 6e7 / 67e12 = 0.9 us): saves 50 us. Relus: 1e4 B / 4.8e12: saves ~20 us.
  CHECK(test::text(v, 0, "operator") == "aten::mm");
  CHECK(test::text(v, 0, "bound") == "compute-bound (tensor)");
  CHECK(std::get<double>(v.rows()[0][9]) == doctest::Approx(0.5));   // attainable_ms
  CHECK(std::get<double>(v.rows()[0][10]) == doctest::Approx(0.5));  // saving_ms
  CHECK(std::get<double>(v.rows()[0][7]) == doctest::Approx(4.945e11 / 1e8));  // intensity
  CHECK(test::text(v, 1, "operator") == "aten::add");
  CHECK(test::text(v, 1, "bound") == "memory-bound");
  CHECK(std::get<double>(v.rows()[1][9]) == doctest::Approx(0.15));
  CHECK(test::text(v, 2, "operator") == "aten::relu");
  CHECK(test::text(v, 2, "bound") == "launch-bound");
  CHECK(std::get<double>(v.rows()[2][10]) == doctest::Approx(0.02 - 1e4 / 4.8e12 * 1e3));
  const auto& k = test::table(r, "kernel_verdicts");
  REQUIRE(k.rows().size() == 3);
  CHECK(test::text(k, 0, "kernel") == "gemm");
  CHECK(test::text(k, 0, "operator") == "aten::mm");
}

TEST_CASE("OpCounters: a GPU the ceiling table does not know gets verdicts and no savings, said") {
  test::TempDir dir;
  tools::OpCounters t(writing_into(dir));
  t.on(DeviceInfo{.device = 0, .name = intern("NVIDIA GeForce GT 710")});
  feed(t);
  Report r("op_counters");
  t.report(r);
  CHECK(std::get<std::string>(test::summary(r).at("ceilings"))
            .find("none known for 'NVIDIA GeForce GT 710': set PASTA_CEILINGS") == 0);
  const auto& v = test::table(r, "verdicts");
  REQUIRE(v.rows().size() == 2);  // linear/addmm and the kernel outside every operator
  CHECK(test::text(v, 0, "saving_ms") == "");
  CHECK(test::text(v, 0, "bound") == "compute-bound (tensor)");  // SM 80% over DRAM 50-70%
}
