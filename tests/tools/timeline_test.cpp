#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <pasta/tools/timeline.hpp>

#include "../support.hpp"

using namespace pasta;

namespace {
nlohmann::json load(const std::string& path) {
  return nlohmann::json::parse(detail::read_file(path))["traceEvents"];
}
std::vector<nlohmann::json> of_cat(const nlohmann::json& trace, const std::string& cat) {
  std::vector<nlohmann::json> out;
  for (const auto& e : trace)
    if (e.contains("cat") && e["cat"] == cat) out.push_back(e);
  return out;
}
}  // namespace

TEST_CASE("Timeline writes kernels, copies, scopes and operators as a Chrome trace in microseconds") {
  test::TempDir dir;
  Config cfg;
  cfg.output_dir = dir.path();
  {
    tools::Timeline t(cfg);
    t.on(DeviceInfo{.device = 0, .name = intern("NVIDIA H100 80GB HBM3")});
    t.on(ScopeBegin{.name = intern("step \"1\""), .thread = 42, .time_ns = 1'000'000});
    t.on(OpBegin{.id = 5, .name = intern("aten::mm"), .thread = 42, .time_ns = 1'000'100});
    t.on(OpEnd{.id = 5, .name = intern("aten::mm"), .thread = 42, .time_ns = 1'000'400});
    KernelComplete k{.correlation = 7,
                     .stream = 13,
                     .device = 0,
                     .name = intern("_Z6kernelPf"),
                     .grid = {4, 2, 1},
                     .block = {128, 1, 1},
                     .start_ns = 1'000'500,
                     .end_ns = 1'003'000};
    t.on(k);
    t.on(Memcpy{.correlation = 8,
                .stream = 13,
                .device = 0,
                .copy_kind = CopyKind::d2h,
                .bytes = 3 << 20,
                .start_ns = 1'004'000,
                .end_ns = 1'006'000});
    t.on(ScopeEnd{.name = intern("step \"1\""), .thread = 42, .time_ns = 1'010'000});
    t.on(KernelComplete{.name = intern("no_times")});  // no timestamps: left out
    CHECK(t.events() == 8);  // 2 process names, scope and op begin/end, kernel, memcpy
  }
  const auto trace = load(dir.file("timeline.trace.json"));
  const auto kernels = of_cat(trace, "kernel");
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0]["name"] == "kernel(float*)");
  CHECK(kernels[0]["ph"] == "X");
  CHECK(kernels[0]["pid"] == 1);  // GPU 0
  CHECK(kernels[0]["tid"] == 13);
  CHECK(kernels[0]["ts"] == 0.5);  // microseconds after the first event
  CHECK(kernels[0]["dur"] == 2.5);
  CHECK(kernels[0]["args"]["grid"] == "(4,2,1)");
  CHECK(kernels[0]["args"]["correlation"] == 7);
  const auto copies = of_cat(trace, "memcpy");
  REQUIRE(copies.size() == 1);
  CHECK(copies[0]["name"] == "memcpy d2h 3.0 MB");
  const auto scopes = of_cat(trace, "scope");
  REQUIRE(scopes.size() == 2);
  CHECK(scopes[0]["name"] == "step \"1\"");
  CHECK(scopes[0]["ph"] == "B");
  CHECK(scopes[1]["ts"] == 10.0);
  const auto ops = of_cat(trace, "op");
  REQUIRE(ops.size() == 2);
  CHECK(ops[0]["name"] == "aten::mm");
  CHECK(ops[0]["ph"] == "B");
  CHECK(ops[0]["tid"] == 42);
  CHECK(ops[0]["ts"] == 0.1);
  CHECK(ops[1]["ph"] == "E");
  CHECK(ops[1]["ts"] == 0.4);
  bool named_gpu = false;
  for (const auto& e : trace)
    named_gpu |= e.contains("ph") && e["ph"] == "M" &&
                 e["args"].value("name", "") == "GPU 0: NVIDIA H100 80GB HBM3";
  CHECK(named_gpu);
}

TEST_CASE("a host-side launch is an instant on its thread, joined to its kernel by correlation") {
  test::TempDir dir;
  Config cfg;
  cfg.output_dir = dir.path();
  {
    tools::Timeline t(cfg);
    // From a launch callback: a host thread and time.
    t.on(KernelLaunch{.correlation = 9, .stream = 7, .name = intern("_Z1kv"), .thread = 42,
                      .time_ns = 2'000'000});
    // From a device record (no launch callbacks): no host thread, the kernel's start.
    t.on(KernelLaunch{.correlation = 10, .stream = 7, .name = intern("_Z1kv"), .thread = 0,
                      .time_ns = 2'010'000});
    t.on(KernelComplete{.correlation = 9, .stream = 7, .name = intern("_Z1kv"),
                        .start_ns = 2'006'500, .end_ns = 2'008'000});
  }
  const auto trace = load(dir.path() + "/timeline.trace.json");
  const auto launches = of_cat(trace, "launch");
  REQUIRE(launches.size() == 1);
  CHECK(launches[0]["ph"] == "i");
  CHECK(launches[0]["pid"] == 0);
  CHECK(launches[0]["tid"] == 42);
  CHECK(launches[0]["args"]["correlation"] == 9);
  const auto kernels = of_cat(trace, "kernel");
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0]["ts"].get<double>() - launches[0]["ts"].get<double>() == doctest::Approx(6.5));
}

TEST_CASE("a timeline cut off before it is closed still parses once closed by hand") {
  test::TempDir dir;
  Config cfg;
  cfg.output_dir = dir.path();
  tools::Timeline t(cfg);
  t.on(KernelComplete{.name = intern("k"), .start_ns = 10, .end_ns = 20});
  t.flush();
  // Perfetto reads the events of a file cut short; pasta's readers close it
  // by hand. Closing it here checks every line before: the host's process
  // name, the kernel, and the clock reading at ts = 0.
  std::string text = detail::read_file(dir.file("timeline.trace.json"));
  text.resize(text.size() - 2);  // the trailing ",\n"
  const auto trace = nlohmann::json::parse(text + "]}");
  REQUIRE(trace["traceEvents"].size() == 3);
  const auto& origin = trace["traceEvents"][1];
  CHECK(origin["name"] == "pasta_origin");
  CHECK(origin["args"]["clock_ns"] == 10);
  CHECK(trace["traceEvents"][2]["name"] == "k");
}

TEST_CASE("a timeline says which process of a job it is, as Kineto does, and how its clock reads") {
  test::TempDir dir;
  Config cfg;
  cfg.output_dir = dir.path();
  cfg.process.pid = 4242;
  cfg.process.host = "node7";
  cfg.process.rank = 3;
  cfg.process.world_size = 8;
  {
    tools::Timeline t(cfg);
    t.on(KernelComplete{.name = intern("k"), .start_ns = 10, .end_ns = 20});
  }
  const auto trace = nlohmann::json::parse(detail::read_file(dir.file("timeline.trace.json")));
  CHECK(trace["distributedInfo"]["rank"] == 3);
  CHECK(trace["distributedInfo"]["world_size"] == 8);
  CHECK(trace["pasta"]["pid"] == 4242);
  CHECK(trace["pasta"]["host"] == "node7");
  CHECK(trace["pasta"]["rank"] == 3);
  CHECK(trace["pasta"]["wall_ns"].get<std::uint64_t>() > 1'600'000'000'000'000'000ull);
  CHECK(trace["pasta"].contains("clock_ns"));
}

TEST_CASE("a timeline with no event leaves no file") {
  test::TempDir dir;
  Config cfg;
  cfg.output_dir = dir.path() + "/sub";
  {
    tools::Timeline t(cfg);
    t.flush();
  }
  CHECK_FALSE(detail::is_directory(cfg.output_dir));
}

TEST_CASE("a timeline that cannot be written says so once") {
  test::CapturedLog log;
  Config cfg;
  cfg.output_dir = "/proc/no-such-dir";
  tools::Timeline t(cfg);
  t.on(KernelComplete{.name = intern("k"), .start_ns = 10, .end_ns = 20});
  CHECK(t.events() == 0);
  REQUIRE(log.lines().size() == 1);
  CHECK(log.lines()[0].starts_with("cannot write /proc/no-such-dir/timeline.trace.json: "));
}

TEST_CASE("a time is written in microseconds with three decimals, from integers") {
  using pasta::tools::Micros;
  CHECK(fmt::format("{}", Micros{0}) == "0.000");
  CHECK(fmt::format("{}", Micros{1234567}) == "1234.567");
  CHECK(fmt::format("{}", Micros{5}) == "0.005");
  CHECK(fmt::format("{}", Micros{-1}) == "-0.001");
  CHECK(fmt::format("{}", Micros{-1000}) == "-1.000");
  CHECK(fmt::format("{}", Micros{-123456789}) == "-123456.789");
  // 2^62 ns: the longest a trace's clock runs, with every digit kept.
  CHECK(fmt::format("{}", Micros{std::int64_t{1} << 62}) == "4611686018427387.904");
}
