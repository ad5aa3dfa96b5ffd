#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include <pasta/core/concepts.hpp>
#include <pasta/core/detail/files.hpp>
#include <pasta/tools/stall_blame.hpp>

#include "../support.hpp"

using namespace pasta;

static_assert(Tool<tools::StallBlame>);

namespace {

double cell_double(const Report& r, std::string_view table, std::size_t row, std::size_t col) {
  const Cell& c = test::table(r, table).rows().at(row).at(col);
  if (auto* d = std::get_if<double>(&c)) return *d;
  if (auto* u = std::get_if<std::uint64_t>(&c)) return static_cast<double>(*u);
  FAIL("not a number");
  return 0;
}

// Run 1's file for the blend kernel, as the sampled run writes it.
std::string samples_json() {
  nlohmann::json pcs = nlohmann::json::array();
  auto pc = [&](std::uint64_t at, std::string reason, std::uint64_t n,
                std::vector<std::uint64_t> waits, std::vector<std::uint64_t> reads) {
    pcs.push_back({{"pc", at}, {"reasons", {{reason, n}}}, {"waits_for", waits}, {"reads", reads}});
  };
  pc(0x370, "long_scoreboard", 300, {0x220}, {0x220});
  pc(0x380, "long_scoreboard", 100, {0x270}, {0x270});
  pc(0x360, "long_scoreboard", 20, {0x1b0}, {0x1b0});
  pc(0x390, "long_scoreboard", 200, {0x2a0, 0x2e0}, {0x2a0});
  pc(0x3a0, "math_pipe_throttle", 380, {}, {});
  pcs.push_back({{"pc", 0x400},
                 {"reasons", {{"long_scoreboard", 7}}},
                 {"waits_for", nlohmann::json::array()}});
  nlohmann::json doc{
      {"schema", "pasta.stall_samples"},
      {"version", 1},
      {"samples", 1007},
      {"functions",
       {{"blend", {{"code", ""}, {"pcs", pcs}}},
        {"never_ran", {{"code", ""}, {"pcs", {{{"pc", 16}, {"reasons", {{"barrier", 5}}}}}}}}}}};
  return doc.dump();
}

// Run 2: the blend kernel's accesses, ten per load, on two allocations.
void instrumented(tools::StallBlame& t) {
  const std::uint64_t cold = 0x100000, warm = 0x900000;
  t.on(MemAlloc{.address = cold, .bytes = 0x100000});
  t.on(MemAlloc{.address = warm, .bytes = 0x10000});
  t.on(KernelLaunch{.correlation = 1, .name = intern("blend")});
  for (std::uint64_t pc : {0x220, 0x270, 0x2e0, 0x1b0, 0x2a0})
    for (std::uint64_t i = 0; i < 10; ++i)
      t.on(PcAccessCount{.correlation = 1,
                         .address = (pc == 0x1b0 || pc == 0x2a0 ? warm : cold) + 64 * i,
                         .pc = pc,
                         .count = 1,
                         .bytes = 4,
                         .flags = access::read});
}

}  // namespace

TEST_CASE("stall_blame: the join charges memory stalls to the allocation the load read") {
  test::TempDir dir;
  const std::string file = dir.file("stall_samples.json");
  REQUIRE(pasta::detail::write_file(file, samples_json()).empty());
  Config cfg;
  cfg.output_dir = dir.path();
  cfg.stall_samples = file;
  tools::StallBlame t(cfg);
  instrumented(t);
  Report r("stall_blame");
  t.report(r);
  CHECK(r.partial().empty());
  // Waiting for one load: cold 400 samples over 20 accesses (20 a access),
  // warm 20 over 10 (2). The FFMA waiting for a warm and a cold load on one
  // scoreboard splits its 200 by those rates: cold 200 * 20/22.
  const auto& blame = test::table(r, "blame");
  REQUIRE(blame.rows().size() == 2);
  CHECK(std::get<std::string>(blame.rows()[0][0]) == "allocation #1 (1048576 B at 0x100000)");
  CHECK(std::get<std::string>(blame.rows()[0][1]) == "(no operator)");
  CHECK(cell_double(r, "blame", 0, 2) == doctest::Approx(400 + 200 * 20.0 / 22));
  CHECK(cell_double(r, "blame", 0, 3) == doctest::Approx((400 + 200 * 20.0 / 22) / 1007));
  CHECK(std::get<std::string>(blame.rows()[1][0]) == "allocation #2 (65536 B at 0x900000)");
  CHECK(cell_double(r, "blame", 1, 2) == doctest::Approx(20 + 200 * 2.0 / 22));
  const auto& rest = test::table(r, "unattributed");
  REQUIRE(rest.rows().size() == 3);
  CHECK(std::get<std::string>(rest.rows()[0][0]) ==
        "kernel made no recorded access in the instrumented run");
  CHECK(cell_double(r, "unattributed", 0, 1) == 5);
  CHECK(std::get<std::string>(rest.rows()[1][0]) ==
        "memory dependency with no load found in the SASS");
  CHECK(cell_double(r, "unattributed", 1, 1) == 7);
  CHECK(std::get<std::string>(rest.rows()[2][0]) ==
        "not at a memory instruction (compute, sync, ...)");
  CHECK(cell_double(r, "unattributed", 2, 1) == 380);
  // The forest: the two allocations, each with the kernel that waited.
  const std::string dot = pasta::detail::read_file(dir.file("stall_blame.forest.dot"));
  CHECK(dot.find("allocation #1 (1048576 B at 0x100000)\\n582 samples (57.8%)") !=
        std::string::npos);
  CHECK(dot.find("n0 -> n1") != std::string::npos);
  const std::string svg = pasta::detail::read_file(dir.file("stall_blame.forest.svg"));
  CHECK(svg.find("<title>allocation #2 (65536 B at 0x900000) - 38 samples (3.8%)</title>") !=
        std::string::npos);
}

TEST_CASE(
    "stall_blame: with no evidence a shared wait goes to the loads whose registers it reads") {
  test::TempDir dir;
  nlohmann::json doc{{"schema", "pasta.stall_samples"},
                     {"version", 1},
                     {"samples", 10},
                     {"functions",
                      {{"blend",
                        {{"pcs",
                          {{{"pc", 0x390},
                            {"reasons", {{"long_scoreboard", 10}}},
                            {"waits_for", {0x2a0, 0x2e0}},
                            {"reads", {0x2a0}}}}}}}}}};
  REQUIRE(pasta::detail::write_file(dir.file("s.json"), doc.dump()).empty());
  Config cfg;
  cfg.output_dir = dir.path();
  cfg.stall_samples = dir.file("s.json");
  tools::StallBlame t(cfg);
  instrumented(t);
  Report r("stall_blame");
  t.report(r);
  REQUIRE(test::table(r, "blame").rows().size() == 1);
  CHECK(std::get<std::string>(test::table(r, "blame").rows()[0][0]) ==
        "allocation #2 (65536 B at 0x900000)");
  CHECK(cell_double(r, "blame", 0, 2) == 10);
}

TEST_CASE("stall_blame: tensors of a framework allocator are blamed, with their operators") {
  test::TempDir dir;
  REQUIRE(pasta::detail::write_file(dir.file("s.json"), samples_json()).empty());
  Config cfg;
  cfg.output_dir = dir.path();
  cfg.stall_samples = dir.file("s.json");
  tools::StallBlame t(cfg);
  t.on(MemAlloc{.address = 0x100000, .bytes = 0x1000000});  // the allocator's segment
  // The line that made the tensor names it in the blame table (torch::Aten's OpBegin::source).
  t.on(OpBegin{.id = 1, .name = intern("aten::randn"), .thread = 7, .source = intern("train.py:3")});
  t.on(TensorAlloc{.address = 0x100000, .bytes = 0x100000, .op = 1, .thread = 7});
  t.on(OpEnd{.id = 1, .name = intern("aten::randn"), .thread = 7});
  t.on(OpBegin{.id = 2, .name = intern("aten::blend"), .thread = 7});
  t.on(KernelLaunch{.correlation = 1, .name = intern("blend"), .thread = 7});
  for (std::uint64_t pc : {0x220, 0x270})
    t.on(PcAccessCount{.correlation = 1,
                       .address = 0x100040,
                       .pc = pc,
                       .count = 1,
                       .bytes = 4,
                       .flags = access::read});
  t.on(OpEnd{.id = 2, .name = intern("aten::blend"), .thread = 7});
  Report r("stall_blame");
  t.report(r);
  const auto& blame = test::table(r, "blame");
  REQUIRE(blame.rows().size() == 1);
  CHECK(std::get<std::string>(blame.rows()[0][0]) ==
        "tensor #1 (1048576 B, aten::randn at train.py:3)");
  CHECK(std::get<std::string>(blame.rows()[0][1]) == "aten::blend");
  CHECK(cell_double(r, "blame", 0, 2) == 400);
  // allocation -> tensor -> operator
  const std::string dot = pasta::detail::read_file(dir.file("stall_blame.forest.dot"));
  CHECK(dot.find("allocation #1 (16777216 B at 0x100000)") < dot.find("tensor #1"));
  CHECK(dot.find("tensor #1") < dot.find("aten::blend"));
  CHECK(dot.find("n1 -> n2") != std::string::npos);
}

TEST_CASE(
    "stall_blame: a samples file that is missing, foreign or newer is a clear partial report") {
  test::TempDir dir;
  Config cfg;
  cfg.output_dir = dir.path();
  auto run = [&](std::string content) {
    if (!content.empty()) REQUIRE(pasta::detail::write_file(dir.file("s.json"), content).empty());
    cfg.stall_samples = dir.file(content.empty() ? "missing.json" : "s.json");
    tools::StallBlame t(cfg);
    instrumented(t);
    Report r("stall_blame");
    t.report(r);
    return r.partial();
  };
  CHECK(run("").find("missing.json: cannot be read") != std::string::npos);
  CHECK(run("{\"schema\": \"other\"}").find("not a stall_samples.json") != std::string::npos);
  CHECK(run("{not json").find("not a stall_samples.json") != std::string::npos);
  CHECK(run(R"({"schema": "pasta.stall_samples", "version": 9, "functions": {}})")
            .find("version 9 is newer") != std::string::npos);
}

TEST_CASE("stall_blame: the sampled run's samples per instruction and reason") {
  test::TempDir dir;
  Config cfg;
  cfg.output_dir = dir.path();
  tools::StallBlame t(cfg);
  const NameId k = intern("blend"), lsb = intern("long_scoreboard");
  t.on(StallSample{.function = k, .pc = 0x370, .reason = lsb, .samples = 30});
  t.on(StallSample{.function = k, .pc = 0x370, .reason = lsb, .samples = 12});
  t.on(StallSample{.function = k,
                   .pc = 0x370,
                   .reason = intern("long_scoreboard_not_issued"),
                   .samples = 9});  // a subset of the 42: not counted again
  t.on(StallSample{.function = k, .pc = 0x3a0, .reason = intern("selected"), .samples = 8});
  CHECK(t.samples_at("blend", 0x370, "long_scoreboard") == 42);
  Report r("stall_blame");
  t.report(r);
  const auto doc = nlohmann::json::parse(pasta::detail::read_file(dir.file("stall_samples.json")));
  CHECK(doc["schema"] == "pasta.stall_samples");
  CHECK(doc["samples"] == 50);  // the not-issued 9 are within the 42
  REQUIRE(doc["functions"]["blend"]["pcs"].size() == 2);
  CHECK(doc["functions"]["blend"]["pcs"][0]["reasons"]["long_scoreboard"] == 42);
  // No code was seen: the stall stays where it is, and the report says so.
  CHECK(doc["functions"]["blend"]["pcs"][0]["waits_for"].empty());
  CHECK(test::table(r, "reasons").rows().size() == 2);
}

TEST_CASE("stall_blame: a view's layout tells its elements from the gaps between its rows") {
  std::vector<pasta::detail::region::Dim> dims;
  using Dims = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
  auto pairs = [&] {
    Dims out;
    for (const auto& d : dims) out.emplace_back(d.size, d.stride);
    return out;
  };
  CHECK(pasta::detail::nested_dims("float[2, 4] strides [12, 1]", dims));  // a column slice
  CHECK(pairs() == Dims{{2, 12}, {4, 1}});
  CHECK(pasta::detail::nested_dims("Half[4, 2] strides [1, 4]", dims));  // a transpose
  CHECK(pairs() == Dims{{2, 4}, {4, 1}});
  CHECK(pasta::detail::nested_dims("float[4, 1, 8] strides [0, 8, 1]", dims));  // an expand
  CHECK(pairs() == Dims{{8, 1}});
  CHECK_FALSE(pasta::detail::nested_dims("float[3, 4] strides [2, 1]", dims));  // rows overlap
  CHECK_FALSE(pasta::detail::nested_dims("float[3, 4] strides [4]", dims));
  CHECK_FALSE(pasta::detail::nested_dims("float[3, x] strides [4, 1]", dims));
  CHECK_FALSE(pasta::detail::nested_dims("", dims));
}

TEST_CASE("stall_blame: views an operator reads link to their base tensor in the forest") {
  test::TempDir dir;
  nlohmann::json pcs = nlohmann::json::array();
  for (auto [at, n, load] :
       {std::tuple{0x370, 300, 0x220}, {0x380, 120, 0x270}, {0x3c0, 50, 0x2e0}})
    pcs.push_back({{"pc", at},
                   {"reasons", {{"long_scoreboard", n}}},
                   {"waits_for", {load}},
                   {"reads", {load}}});
  const nlohmann::json doc{{"schema", "pasta.stall_samples"},
                           {"version", 1},
                           {"samples", 470},
                           {"functions", {{"blend", {{"code", ""}, {"pcs", pcs}}}}}};
  REQUIRE(pasta::detail::write_file(dir.file("s.json"), doc.dump()).empty());
  Config cfg;
  cfg.output_dir = dir.path();
  cfg.stall_samples = dir.file("s.json");
  tools::StallBlame t(cfg);
  // qkv, float[2, 12], split into q, k, v of float[2, 4]: q at +0 B, k at +16 B.
  const std::uint64_t qkv = 0x100000;
  const NameId slice = intern("float[2, 4] strides [12, 1]");
  t.on(MemAlloc{.address = qkv, .bytes = 0x200000});
  t.on(OpBegin{.id = 1, .name = intern("aten::linear"), .thread = 7});
  t.on(TensorAlloc{.address = qkv, .bytes = 96, .op = 1, .thread = 7});
  t.on(OpEnd{.id = 1, .name = intern("aten::linear"), .thread = 7});
  t.on(OpBegin{.id = 2, .name = intern("aten::attn"), .thread = 7});
  for (std::uint64_t offset : {0, 16})
    t.on(TensorView{.address = qkv + offset,
                    .bytes = 64,
                    .base = qkv,
                    .base_bytes = 96,
                    .layout = slice,
                    .element_bytes = 4,
                    .op = 2,
                    .thread = 7});
  // A view of storage never seen allocated links to nothing.
  t.on(TensorView{.address = 0x900000, .bytes = 64, .layout = slice, .element_bytes = 4, .op = 2});
  t.on(KernelLaunch{.correlation = 1, .name = intern("blend"), .thread = 7});
  auto read = [&](std::uint64_t correlation, std::uint64_t pc, std::uint64_t address) {
    t.on(PcAccessCount{.correlation = correlation,
                       .address = address,
                       .pc = pc,
                       .count = 1,
                       .bytes = 4,
                       .flags = access::read});
  };
  read(1, 0x220, qkv + (12 + 2) * 4);  // q[1][2]: inside k's span too, but in its gap
  read(1, 0x270, qkv + (12 + 5) * 4);  // k[1][1]
  read(1, 0x2e0, qkv + 9 * 4);         // v[0][1]: in q's and k's spans, an element of neither
  t.on(OpEnd{.id = 2, .name = intern("aten::attn"), .thread = 7});
  // The views were aten::attn's: aten::sum reads the base itself.
  t.on(OpBegin{.id = 3, .name = intern("aten::sum"), .thread = 7});
  t.on(KernelLaunch{.correlation = 2, .name = intern("blend"), .thread = 7});
  read(2, 0x220, qkv + (12 + 2) * 4);
  read(2, 0x220, qkv + (12 + 3) * 4);
  t.on(OpEnd{.id = 3, .name = intern("aten::sum"), .thread = 7});
  Report r("stall_blame");
  t.report(r);
  CHECK(r.partial().empty());
  const std::string base = "tensor #1 (96 B, aten::linear)";
  const std::vector<std::tuple<std::string, std::string, double>> expected{
      {base, "aten::sum", 200},  // 0x220's 300 samples: 2 of its 3 accesses
      {base + " / view float[2, 4] strides [12, 1] at +16 B", "aten::attn", 120},
      {base + " / view float[2, 4] strides [12, 1] at +0 B", "aten::attn", 100},
      {base, "aten::attn", 50}};
  const auto& blame = test::table(r, "blame");
  REQUIRE(blame.rows().size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(std::get<std::string>(blame.rows()[i][0]) == std::get<0>(expected[i]));
    CHECK(std::get<std::string>(blame.rows()[i][1]) == std::get<1>(expected[i]));
    CHECK(cell_double(r, "blame", i, 2) == std::get<2>(expected[i]));
  }
  // allocation -> tensor -> view -> operator, the tensor with all 470.
  const std::string dot = pasta::detail::read_file(dir.file("stall_blame.forest.dot"));
  CHECK(dot.find("n0 [label=\"allocation #1 (2097152 B at 0x100000)\\n470 samples") !=
        std::string::npos);
  CHECK(dot.find("n1 [label=\"tensor #1 (96 B, aten::linear)\\n470 samples (100.0%)") !=
        std::string::npos);
  CHECK(dot.find("n2 [label=\"aten::sum\\n200 samples") != std::string::npos);
  CHECK(dot.find("n3 [label=\"view float[2, 4] strides [12, 1] at +16 B\\n120 samples") !=
        std::string::npos);
  CHECK(dot.find("n4 [label=\"aten::attn\\n120 samples") != std::string::npos);
  CHECK(dot.find("n1 -> n3") != std::string::npos);
  CHECK(dot.find("n3 -> n4") != std::string::npos);
  const std::string svg = pasta::detail::read_file(dir.file("stall_blame.forest.svg"));
  CHECK(svg.find("<title>view float[2, 4] strides [12, 1] at +0 B - 100 samples (21.3%)</title>") !=
        std::string::npos);
}

namespace {

// A disassembler of a made-up machine: one kernel "k" per image, one
// 16-byte instruction per byte of code (1: a load, 2: a bulk copy), and a
// stall waiting for every load before it.
struct ToyDisassembler {
  struct Instruction {
    std::uint64_t pc;
    std::string opcode;
  };
  struct Waits {
    std::vector<std::uint64_t> all, reads;
  };
  static constexpr std::string_view not_found = "no toy disassembler";
  explicit ToyDisassembler(const Config&) {}
  std::string locate() const { return "toy"; }
  template <class F>
  static void for_each_kernel(std::span<const std::byte> image, F&& f) {
    f("k", 1u, image);
  }
  static std::vector<Instruction> disassemble(std::span<const std::byte> code, unsigned,
                                              const std::string&, std::string&) {
    std::vector<Instruction> out;
    for (std::size_t i = 0; i < code.size(); ++i)
      out.push_back({16 * i, code[i] == std::byte{1}   ? "LOAD"
                             : code[i] == std::byte{2} ? "BULK"
                                                       : "ADD"});
    return out;
  }
  static const Instruction* at(const std::vector<Instruction>& code, std::uint64_t pc) {
    return pc % 16 == 0 && pc / 16 < code.size() ? &code[pc / 16] : nullptr;
  }
  static Waits waits_for(const std::vector<Instruction>& code, std::uint64_t pc) {
    Waits w;
    for (const auto& i : code)
      if (i.pc < pc && i.opcode == "LOAD") w.all.push_back(i.pc);
    w.reads = w.all;
    return w;
  }
};

// The toy machine as a policy that names its bulk copies as loads no access
// patch sees.
struct ToyBulkDisassembler : ToyDisassembler {
  using ToyDisassembler::ToyDisassembler;
  static constexpr std::string_view unseen_loads_are = "toy bulk loads";
  static std::size_t unseen_loads(const std::vector<Instruction>& code) {
    return static_cast<std::size_t>(
        std::count_if(code.begin(), code.end(), [](const auto& i) { return i.opcode == "BULK"; }));
  }
};

}  // namespace

TEST_CASE("stall_blame: the sampled run reads machine code through its Disassembler policy") {
  static_assert(Tool<tools::BasicStallBlame<ToyDisassembler>>);
  test::TempDir dir;
  Config cfg;
  cfg.output_dir = dir.path();
  tools::BasicStallBlame<ToyDisassembler> t(cfg);
  const std::byte image[] = {std::byte{1}, std::byte{0}, std::byte{1}, std::byte{0}};
  t.on(ModuleImage{.image = image, .image_bytes = sizeof image});
  t.on(StallSample{
      .function = intern("k"), .pc = 0x30, .reason = intern("long_scoreboard"), .samples = 6});
  Report r("stall_blame");
  t.report(r);
  const auto doc = nlohmann::json::parse(pasta::detail::read_file(dir.file("stall_samples.json")));
  CHECK(doc["nvdisasm"] == "toy");
  const auto& pc = doc["functions"]["k"]["pcs"][0];
  CHECK(pc["opcode"] == "ADD");
  CHECK(pc["waits_for"] == nlohmann::json{0, 0x20});
  CHECK(std::get<std::string>(test::table(r, "stalls").rows().at(0).at(5)) == "0x0 0x20");
}

TEST_CASE("stall_blame: kernels whose loads no patch sees are named, with their stalls") {
  test::TempDir one, two;
  Config cfg;
  cfg.output_dir = one.path();
  tools::BasicStallBlame<ToyBulkDisassembler> sampled(cfg);
  const std::byte image[] = {std::byte{2}, std::byte{1}, std::byte{2}, std::byte{0}};
  sampled.on(ModuleImage{.image = image, .image_bytes = sizeof image});
  sampled.on(StallSample{
      .function = intern("k"), .pc = 0x30, .reason = intern("long_scoreboard"), .samples = 6});
  sampled.on(StallSample{
      .function = intern("k"), .pc = 0x20, .reason = intern("barrier"), .samples = 4});
  Report r1("stall_blame");
  sampled.report(r1);
  const auto doc = nlohmann::json::parse(pasta::detail::read_file(one.file("stall_samples.json")));
  CHECK(doc["functions"]["k"]["unseen_loads"] == 2);

  cfg.output_dir = two.path();
  cfg.stall_samples = one.file("stall_samples.json");
  tools::BasicStallBlame<ToyBulkDisassembler> joined(cfg);
  joined.on(ModuleImage{.image = image, .image_bytes = sizeof image});
  joined.on(MemAlloc{.address = 0x1000, .bytes = 0x1000});
  joined.on(KernelLaunch{.correlation = 1, .name = intern("k")});
  joined.on(PcAccessCount{.correlation = 1,
                          .address = 0x1000,
                          .pc = 0x10,
                          .count = 1,
                          .bytes = 4,
                          .flags = access::read});
  Report r2("stall_blame");
  joined.report(r2);
  const auto& rows = test::table(r2, "unseen_loads").rows();
  REQUIRE(rows.size() == 1);
  CHECK(std::get<std::string>(rows[0][0]) == "k");
  CHECK(cell_double(r2, "unseen_loads", 0, 1) == 2);
  CHECK(cell_double(r2, "unseen_loads", 0, 2) == 10);  // every stall sample of the kernel
  CHECK(test::table(r2, "unseen_loads").title().find("toy bulk loads") != std::string::npos);
}

TEST_CASE("stall_blame: without such loads there is no unseen_loads table") {
  test::TempDir dir;
  Config cfg;
  cfg.output_dir = dir.path();
  cfg.stall_samples = dir.file("stall_samples.json");
  pasta::detail::write_file(cfg.stall_samples, samples_json());
  tools::StallBlame t(cfg);
  instrumented(t);
  Report r("stall_blame");
  t.report(r);
  CHECK(test::table(r, "blame").rows().size() > 0);
  for (const Table& table : r.tables()) CHECK(table.name() != "unseen_loads");
}

namespace {

// One access of a synthetic launch, as the raw trace records it.
struct Raw {
  std::uint64_t correlation, address, pc;
  MemSpace space;
};

// What the device does with a launch's accesses under the pc patches: one
// count per (pc, space, region, strided views holding the address), holding
// the first address counted (kernels/access_patches.cu, region_key.hpp).
std::vector<PcAccessCount> reduce_as_the_device(const tools::StallBlame& t,
                                                const std::vector<Raw>& launch) {
  AccessRegions regions;
  t.access_regions(launch.front().correlation, regions);
  regions.build();
  std::map<std::uint64_t, PcAccessCount> by_key;
  std::vector<std::uint64_t> order;
  for (const Raw& a : launch) {
    const std::uint64_t key = pasta::detail::region::access_key(
        regions.table(), a.pc, static_cast<std::uint32_t>(a.space), a.address);
    auto [it, fresh] = by_key.try_emplace(key, PcAccessCount{.correlation = a.correlation,
                                                             .address = a.address,
                                                             .pc = a.pc,
                                                             .bytes = 0,
                                                             .flags = access::read,
                                                             .space = a.space});
    if (fresh) order.push_back(key);
    ++it->second.count;
    it->second.bytes += 4;
  }
  std::vector<PcAccessCount> out;
  for (const std::uint64_t k : order) out.push_back(by_key.at(k));
  return out;
}

}  // namespace

TEST_CASE("stall_blame: counts reduced by region equal the raw accesses, pc by pc") {
  // A segment holding qkv (q, k and v strided views of it, read by
  // aten::attn) and a second tensor; accesses land on the views' elements,
  // their gaps, the segment outside any tensor, no allocation, and shared
  // memory, from eight instructions over two launches.
  const std::uint64_t segment = 0x100000, qkv = segment + 0x200, other = segment + 0x2000;
  const std::uint32_t rows = 8, cols = 16;
  std::mt19937_64 random(42);
  std::vector<std::vector<Raw>> launches(2);
  for (std::uint64_t c = 1; c <= 2; ++c)
    for (int i = 0; i < 20000; ++i) {
      const std::uint64_t pc = 0x100 + 0x10 * (random() % 8);
      std::uint64_t address = qkv + 4 * (random() % (3 * rows * cols));  // q, k or v
      switch (random() % 8) {
        case 0:
          address = other + 4 * (random() % 64);
          break;
        case 1:
          address = segment + 4 * (random() % 128);
          break;  // before qkv: no tensor
        case 2:
          address = 0x900000 + random() % 256;
          break;  // no allocation
        default:
          break;
      }
      const MemSpace space = random() % 16 == 0 ? MemSpace::shared : MemSpace::global;
      launches[c - 1].push_back(
          {c, space == MemSpace::shared ? address & 0xfff : address, pc, space});
    }

  auto run = [&](const std::string& dir, bool reduced) {
    Config c;
    c.output_dir = dir;
    tools::StallBlame t(c);
    t.on(MemAlloc{.address = segment, .bytes = 0x10000});
    t.on(OpBegin{.id = 1, .name = intern("aten::linear"), .thread = 7});
    t.on(TensorAlloc{.address = qkv, .bytes = 4 * 3 * rows * cols, .op = 1, .thread = 7});
    t.on(TensorAlloc{.address = other, .bytes = 256, .op = 1, .thread = 7});
    t.on(OpEnd{.id = 1, .name = intern("aten::linear"), .thread = 7});
    t.on(OpBegin{.id = 2, .name = intern("aten::attn"), .thread = 7});
    const NameId layout =
        intern(fmt::format("Float[{}, {}] strides [{}, 1]", rows, cols, 3 * cols));
    for (std::uint64_t v = 0; v < 3; ++v)
      t.on(TensorView{.address = qkv + 4 * cols * v,
                      .bytes = 4 * (3 * cols * (rows - 1) + cols),
                      .base = qkv,
                      .base_bytes = 4 * 3 * rows * cols,
                      .layout = layout,
                      .element_bytes = 4,
                      .op = 2,
                      .thread = 7});
    t.on(KernelLaunch{.correlation = 1, .name = intern("attn_kernel"), .thread = 7});
    std::size_t events = 0;
    auto deliver = [&](const std::vector<Raw>& launch) {
      if (reduced) {
        for (const PcAccessCount& e : reduce_as_the_device(t, launch)) t.on(e), ++events;
      } else {
        for (const Raw& a : launch)
          t.on(PcAccessCount{.correlation = a.correlation,
                             .address = a.address,
                             .pc = a.pc,
                             .count = 1,
                             .bytes = 4,
                             .flags = access::read,
                             .space = a.space}),
              ++events;
      }
    };
    deliver(launches[0]);
    t.on(OpEnd{.id = 2, .name = intern("aten::attn"), .thread = 7});
    // The second launch is aten::sum's: the views were aten::attn's.
    t.on(OpBegin{.id = 3, .name = intern("aten::sum"), .thread = 7});
    t.on(KernelLaunch{.correlation = 2, .name = intern("attn_kernel"), .thread = 7});
    deliver(launches[1]);
    t.on(OpEnd{.id = 3, .name = intern("aten::sum"), .thread = 7});
    Report r("stall_blame");
    t.report(r);
    return std::pair{pasta::detail::read_file(dir + "/stall_blame.accesses.csv"), events};
  };
  test::TempDir dir;
  const auto [raw, raw_events] = run(dir.file("raw"), false);
  const auto [reduced, reduced_events] = run(dir.file("reduced"), true);
  CHECK(raw_events == 40000);
  CHECK(reduced_events < 400);
  CHECK(reduced == raw);
  // Every kind of target is there: the views, the tensors, the segment, nothing.
  for (const char* what : {"/ view Float[8, 16] strides [48, 1] at +0 B",
                           "/ view Float[8, 16] strides [48, 1] at +64 B",
                           "/ view Float[8, 16] strides [48, 1] at +128 B", "tensor #2 (256 B",
                           "allocation #1", "(no allocation"})
    CHECK_MESSAGE(raw.find(what) != std::string::npos, what);
}

TEST_CASE("stall_blame: at model scale the tables show the largest rows and sum the rest") {
  // 30 allocations, each read by its own load, whose stalls are 100, 99, ... samples.
  test::TempDir dir;
  nlohmann::json pcs = nlohmann::json::array();
  for (std::uint64_t i = 0; i < 30; ++i)
    pcs.push_back({{"pc", 0x1000 + 16 * i},
                   {"reasons", {{"long_scoreboard", 100 - i}}},
                   {"waits_for", {0x100 + 16 * i}},
                   {"reads", {0x100 + 16 * i}}});
  const nlohmann::json doc{{"schema", "pasta.stall_samples"},
                           {"version", 1},
                           {"samples", 2565},
                           {"functions", {{"k", {{"code", ""}, {"pcs", pcs}}}}}};
  REQUIRE(pasta::detail::write_file(dir.file("samples.json"), doc.dump()).empty());
  Config c;
  c.output_dir = dir.path();
  c.stall_samples = dir.file("samples.json");
  tools::StallBlame t(c);
  t.on(KernelLaunch{.correlation = 1, .name = intern("k")});
  for (std::uint64_t i = 0; i < 30; ++i) {
    t.on(MemAlloc{.address = 0x100000 * (i + 1), .bytes = 0x1000});
    t.on(PcAccessCount{.correlation = 1,
                       .address = 0x100000 * (i + 1),
                       .pc = 0x100 + 16 * i,
                       .count = 7,
                       .bytes = 28,
                       .flags = access::read});
  }
  Report r("stall_blame");
  t.report(r);
  const auto& blame = test::table(r, "blame");
  REQUIRE(blame.rows().size() == 26);
  CHECK(std::get<std::string>(blame.rows()[0][0]).starts_with("allocation #1 "));
  CHECK(cell_double(r, "blame", 0, 2) == 100);
  CHECK(std::get<std::string>(blame.rows()[25][0]) == "(5 more)");
  CHECK(cell_double(r, "blame", 25, 2) == 75 + 74 + 73 + 72 + 71);
  const auto& ops = test::table(r, "blame_operators");
  REQUIRE(ops.rows().size() == 1);
  CHECK(std::get<std::uint64_t>(ops.rows()[0][1]) == 30);  // tensors under the one operator
  CHECK(cell_double(r, "blame_operators", 0, 2) == 2565);
  // Every row in the file beside the report.
  const std::string all = pasta::detail::read_file(dir.file("stall_blame.blame_all.csv"));
  CHECK(std::count(all.begin(), all.end(), '\n') == 31);
  // The forest keeps six allocations and sums the others.
  const std::string dot = pasta::detail::read_file(dir.file("stall_blame.forest.dot"));
  CHECK(dot.find("(24 more)") != std::string::npos);
}
