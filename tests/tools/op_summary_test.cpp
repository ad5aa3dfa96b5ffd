#include <doctest/doctest.h>

#include <map>
#include <string>

#include <pasta/core/concepts.hpp>
#include <pasta/tools/op_summary.hpp>

#include "../support.hpp"

using namespace pasta;
using test::cell;

static_assert(Tool<tools::OpSummary>);

namespace {
OpBegin op_begin(std::uint64_t id, std::uint64_t parent, std::string_view op, std::uint32_t depth,
                 std::uint64_t t, std::string_view inputs = {}) {
  return {.id = id,
          .parent = parent,
          .name = intern(op),
          .inputs = intern(inputs),
          .thread = 1,
          .depth = depth,
          .time_ns = t};
}
OpEnd op_end(std::uint64_t id, std::uint64_t t) { return {.id = id, .thread = 1, .time_ns = t}; }
KernelComplete kernel(std::uint64_t op, std::string_view name, std::uint64_t start,
                      std::uint64_t end) {
  return {.name = intern(name), .start_ns = start, .end_ns = end, .op = op};
}
}  // namespace

TEST_CASE("OpSummary charges device time to the operator and, through the chain, to its callers") {
  tools::OpSummary s;
  s.on(op_begin(1, 0, "aten::linear", 0, 0));
  s.on(op_begin(2, 1, "aten::addmm", 1, 10));
  s.on(op_end(2, 60));
  s.on(op_end(1, 100));
  s.on(op_begin(3, 0, "aten::relu", 0, 200));
  s.on(op_end(3, 230));
  // Device work completes after the operators ended.
  s.on(kernel(2, "gemm", 1000, 1400));
  s.on(kernel(1, "bias", 2000, 2100));
  s.on(kernel(3, "relu_kernel", 3000, 3050));
  s.on(kernel(0, "_Z9vectorAddPfS_S_i", 4000, 4200));
  s.on(Memcpy{.bytes = 64, .start_ns = 5000, .end_ns = 5030, .op = 2});
  s.on(Memset{.bytes = 64, .start_ns = 6000, .end_ns = 6010});

  const auto* linear = s.stats("aten::linear");
  REQUIRE(linear);
  CHECK(linear->calls == 1);
  CHECK(linear->kernels == 1);
  CHECK(linear->copies == 0);
  CHECK(linear->device_self_ns == 100);
  CHECK(linear->device_total_ns == 530);  // its own 100 + addmm's kernel 400 and copy 30
  CHECK(linear->host_total_ns == 100);
  CHECK(linear->host_self_ns == 50);  // 100 less addmm's 50
  const auto* addmm = s.stats("aten::addmm");
  REQUIRE(addmm);
  CHECK(addmm->kernels == 1);
  CHECK(addmm->copies == 1);
  CHECK(addmm->device_self_ns == 430);
  CHECK(addmm->device_total_ns == 430);
  CHECK(addmm->host_self_ns == 50);
  CHECK(addmm->host_total_ns == 50);
  CHECK(s.stats("aten::relu")->device_self_ns == 50);
  CHECK(s.stats("aten::relu")->host_total_ns == 30);
  CHECK(s.stats("gemm") == nullptr);  // a kernel name, not an operator
  CHECK(s.attributed() == 3);
  CHECK(s.unattributed() == 1);
  CHECK(s.unattributed_copies() == 1);
  CHECK(s.evicted().kernels == 0);

  Report r("op_summary");
  s.on(op_begin(4, 0, "aten::never_ran_on_device", 0, 300));  // listed with zero device time
  s.report(r);
  auto sum = test::summary(r);
  CHECK(std::get<std::uint64_t>(sum["operators"]) == 4);
  CHECK(std::get<std::uint64_t>(sum["calls"]) == 4);
  CHECK(std::get<std::uint64_t>(sum["kernels"]) == 4);
  CHECK(std::get<std::uint64_t>(sum["kernels attributed to an operator"]) == 3);
  CHECK(std::get<double>(sum["kernels attributed (%)"]) == doctest::Approx(75.0));
  CHECK(std::get<std::uint64_t>(sum["kernels outside every operator"]) == 1);
  CHECK(std::get<std::uint64_t>(sum["kernels whose operator record was evicted"]) == 0);
  CHECK(std::get<double>(sum["device time (ms)"]) == doctest::Approx(790e-6));
  CHECK(r.notes().empty());
  REQUIRE(r.tables().size() == 2);  // no "inputs": no operator recorded its inputs

  const Table& ops = test::table(r, "operators");
  REQUIRE(ops.rows().size() == 4);
  CHECK(cell<std::uint64_t>(ops, 0, 0) == 1);
  CHECK(cell<std::string>(ops, 0, 1) == "aten::addmm");
  CHECK(cell<std::string>(ops, 1, 1) == "aten::linear");
  CHECK(cell<std::string>(ops, 2, 1) == "aten::relu");
  CHECK(cell<std::string>(ops, 3, 1) == "aten::never_ran_on_device");
  CHECK(cell<std::uint64_t>(ops, 0, 2) == 1);                            // calls
  CHECK(cell<std::uint64_t>(ops, 0, 3) == 1);                            // kernels
  CHECK(cell<std::uint64_t>(ops, 0, 4) == 1);                            // copies
  CHECK(cell<double>(ops, 0, 5) == doctest::Approx(430e-6));             // device_self_ms
  CHECK(cell<double>(ops, 1, 6) == doctest::Approx(530e-6));             // device_total_ms
  CHECK(cell<double>(ops, 1, 7) == doctest::Approx(50e-6));              // host_self_ms
  CHECK(cell<double>(ops, 1, 8) == doctest::Approx(100e-6));             // host_total_ms
  CHECK(cell<double>(ops, 0, 9) == doctest::Approx(100.0 * 430 / 790));  // device_self_pct
  CHECK(cell<double>(ops, 3, 5) == 0.0);

  const Table& outside = test::table(r, "unattributed");
  REQUIRE(outside.rows().size() == 1);
  CHECK(cell<std::string>(outside, 0, 0) == "vectorAdd");
  CHECK(cell<std::uint64_t>(outside, 0, 1) == 1);
  CHECK(cell<double>(outside, 0, 2) == doctest::Approx(200e-6));
}

TEST_CASE("OpSummary counts an operator that calls itself once in its totals") {
  tools::OpSummary s;
  s.on(op_begin(1, 0, "A", 0, 0));
  s.on(op_begin(2, 1, "B", 1, 10));
  s.on(op_begin(3, 2, "A", 2, 20));
  s.on(op_end(3, 50));
  s.on(op_end(2, 90));
  s.on(op_end(1, 100));
  s.on(kernel(3, "k", 1000, 1010));
  const auto* a = s.stats("A");
  const auto* b = s.stats("B");
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->calls == 2);
  CHECK(a->device_self_ns == 10);
  CHECK(a->device_total_ns == 10);  // not 20: inner and outer A are one name on the chain
  CHECK(b->device_self_ns == 0);
  CHECK(b->device_total_ns == 10);
  CHECK(a->host_total_ns == 100);     // the outer call only
  CHECK(a->host_self_ns == 30 + 20);  // inner 30; outer 100 less B's 80
  CHECK(b->host_total_ns == 80);
  CHECK(b->host_self_ns == 50);  // 80 less the inner A's 30
}

TEST_CASE("OpSummary reports activities of operators that left its table, and finds open ones") {
  constexpr std::uint64_t slots = tools::OpSummary::table_slots;
  tools::OpSummary s;

  SUBCASE("an ended operator whose slot was reused is 'evicted', not dropped") {
    s.on(op_begin(5, 0, "x", 0, 0));
    s.on(op_end(5, 10));
    s.on(op_begin(5 + slots, 0, "y", 0, 20));  // the same slot
    s.on(op_end(5 + slots, 30));
    s.on(kernel(5, "k", 100, 140));
    s.on(kernel(5 + slots, "k", 200, 210));
    s.on(kernel(999, "k", 300, 301));  // an operator never seen
    s.on(Memcpy{.start_ns = 400, .end_ns = 402, .op = 5});
    CHECK(s.attributed() == 1);
    CHECK(s.evicted().kernels == 2);
    CHECK(s.evicted().copies == 1);
    CHECK(s.evicted().device_self_ns == 43);
    CHECK(s.stats("x")->device_self_ns == 0);
    CHECK(s.stats("y")->device_self_ns == 10);

    Report r("op_summary");
    s.report(r);
    const Table& ops = test::table(r, "operators");
    REQUIRE(ops.rows().size() == 3);
    CHECK(cell<std::string>(ops, 2, 1) == "(operator record evicted)");
    CHECK(std::holds_alternative<std::monostate>(ops.rows()[2][0]));
    CHECK(cell<std::uint64_t>(ops, 2, 3) == 2);
    CHECK(cell<std::uint64_t>(ops, 2, 4) == 1);
    CHECK(cell<double>(ops, 2, 5) == doctest::Approx(43e-6));
    CHECK(std::get<std::uint64_t>(test::summary(r)["kernels whose operator record was evicted"]) ==
          2);
    CHECK(r.notes().size() == 1);
  }

  SUBCASE("an open caller whose slot was reused is found on its thread's stack") {
    s.on(op_begin(1, 0, "step", 0, 0));
    s.on(op_begin(2, 1, "child", 1, 10));
    s.on(op_end(2, 20));
    s.on(op_begin(1 + slots, 1, "other", 1, 30));  // takes step's slot while step is open
    s.on(op_end(1 + slots, 40));
    s.on(kernel(2, "k", 100, 107));
    CHECK(s.stats("child")->device_self_ns == 7);
    CHECK(s.stats("step")->device_total_ns == 7);
    CHECK(s.stats("other")->device_total_ns == 0);
  }
}

TEST_CASE("OpSummary splits operators by their recorded input shapes") {
  tools::OpSummary s;
  s.on(op_begin(1, 0, "aten::mm", 0, 0, "float[64, 64], float[64, 64]"));
  s.on(op_end(1, 10));
  s.on(op_begin(2, 0, "aten::mm", 0, 20, "float[8, 8], float[8, 8]"));
  s.on(op_end(2, 30));
  s.on(op_begin(3, 0, "aten::mm", 0, 40, "float[64, 64], float[64, 64]"));
  s.on(op_end(3, 50));
  s.on(op_begin(4, 0, "aten::relu", 0, 60));  // no inputs recorded: not in the table
  s.on(op_end(4, 70));
  s.on(kernel(1, "gemm", 100, 200));
  s.on(kernel(2, "gemm", 300, 305));
  s.on(kernel(3, "gemm", 400, 500));
  s.on(kernel(4, "relu", 600, 900));
  Report r("op_summary");
  s.report(r);
  const Table& in = test::table(r, "inputs");
  REQUIRE(in.rows().size() == 2);
  CHECK(cell<std::string>(in, 0, 0) == "aten::mm");
  CHECK(cell<std::string>(in, 0, 1) == "float[64, 64], float[64, 64]");
  CHECK(cell<std::uint64_t>(in, 0, 2) == 2);
  CHECK(cell<double>(in, 0, 3) == doctest::Approx(200e-6));
  CHECK(cell<std::string>(in, 1, 1) == "float[8, 8], float[8, 8]");
  CHECK(cell<std::uint64_t>(in, 1, 2) == 1);
  CHECK(cell<double>(in, 1, 3) == doctest::Approx(5e-6));
  CHECK(s.stats("aten::mm")->calls == 3);
  CHECK(s.stats("aten::mm")->device_self_ns == 205);
}

TEST_CASE("OpSummary splits a compiled kernel's time equally among the operators it fuses") {
  tools::OpSummary s;
  // CompiledFunction launches two Triton kernels and calls one operator itself.
  s.on(op_begin(1, 0, "CompiledFunction", 0, 0));
  s.on(op_begin(2, 1, "triton_poi_fused_add_relu_0", 1, 10));
  s.on(FusedKernel{.op = 2,
                   .kernel = intern("triton_poi_fused_add_relu_0"),
                   .source = intern("cq7abc"),
                   .fused = intern("aten::add, aten::relu, aten::mul"),
                   .graph = intern("/tmp/g/cgraph.py")});
  s.on(op_end(2, 20));
  s.on(op_begin(3, 1, "aten::mm", 1, 30));
  s.on(op_end(3, 40));
  s.on(op_begin(4, 1, "triton_poi_fused_0", 1, 50));
  s.on(FusedKernel{.op = 4,
                   .kernel = intern("triton_poi_fused_0"),
                   .source = intern("czzfill"),
                   .graph = intern("/tmp/g/cgraph.py")});
  s.on(op_end(4, 60));
  // A second launch of the first kernel: the same source, so the same kernel.
  s.on(op_begin(5, 1, "triton_poi_fused_add_relu_0", 1, 70));
  s.on(FusedKernel{.op = 5,
                   .kernel = intern("triton_poi_fused_add_relu_0"),
                   .source = intern("cq7abc"),
                   .fused = intern("aten::add, aten::relu, aten::mul"),
                   .graph = intern("/tmp/g/cgraph.py")});
  s.on(op_end(5, 80));
  s.on(op_end(1, 100));
  s.on(kernel(2, "triton_poi_fused_add_relu_0", 1000, 1100));  // 100 ns: 34 + 33 + 33
  s.on(kernel(3, "gemm", 2000, 2300));
  s.on(kernel(4, "triton_poi_fused_0", 3000, 3010));
  s.on(kernel(5, "triton_poi_fused_add_relu_0", 4000, 4200));  // 200 ns: 67 + 67 + 66
  s.on(kernel(0, "outside", 5000, 5005));

  CHECK(s.direct() == 1);
  CHECK(s.fused() == 2);
  CHECK(s.unattributed_total() == 2);  // "outside", and the kernel with no operator named
  CHECK(s.attributed() == 3);

  const auto* add = s.stats("aten::add");
  REQUIRE(add);
  CHECK(add->calls == 0);
  CHECK(add->kernels == 0);
  CHECK(add->fused_kernels == 2);
  CHECK(add->device_self_ns == 34 + 67);
  CHECK(add->device_total_ns == 34 + 67);
  CHECK(add->fused_ns == 34 + 67);
  CHECK(s.stats("aten::relu")->device_self_ns == 33 + 67);
  CHECK(s.stats("aten::mul")->device_self_ns == 33 + 66);
  const auto* launch = s.stats("triton_poi_fused_add_relu_0");
  REQUIRE(launch);
  CHECK(launch->calls == 2);
  CHECK(launch->launches == 2);
  CHECK(launch->device_self_ns == 0);
  CHECK(launch->device_total_ns == 300);
  const auto* compiled = s.stats("CompiledFunction");
  CHECK(compiled->device_self_ns == 0);
  CHECK(compiled->device_total_ns == 300 + 300 + 10);
  // No operator named: charged to its launching call, as direct time.
  const auto* unnamed = s.stats("triton_poi_fused_0");
  CHECK(unnamed->kernels == 1);
  CHECK(unnamed->device_self_ns == 10);

  REQUIRE(s.compiled().size() == 2);
  CHECK(s.compiled()[0].launches == 2);
  CHECK(s.compiled()[0].kernels == 2);
  CHECK(s.compiled()[0].device_ns == 300);
  CHECK(s.compiled()[0].ops.size() == 3);

  Report r("op_summary");
  s.report(r);
  auto sum = test::summary(r);
  CHECK(std::get<std::uint64_t>(sum["kernels by attribution: direct operator"]) == 1);
  CHECK(std::get<std::uint64_t>(sum["kernels by attribution: fused by compiler"]) == 2);
  CHECK(std::get<std::uint64_t>(sum["kernels by attribution: unattributed"]) == 2);
  CHECK(std::get<std::uint64_t>(sum["kernels attributed to an operator"]) == 3);
  REQUIRE(r.notes().size() == 1);
  CHECK(r.notes()[0].find("equal shares, 1/N of its device time") != std::string::npos);

  const Table& ops = test::table(r, "operators");
  std::map<std::string, std::size_t> row;
  for (std::size_t i = 0; i < ops.rows().size(); ++i) row[cell<std::string>(ops, i, 1)] = i;
  CHECK(row.count("triton_poi_fused_add_relu_0") == 0);  // all its time went to aten::add ...
  REQUIRE(row.count("triton_poi_fused_0") == 1);
  CHECK(cell<std::string>(ops, row["triton_poi_fused_0"], 12) == "compiled, no operator named");
  CHECK(cell<std::string>(ops, row["aten::mm"], 12) == "direct operator");
  CHECK(cell<std::string>(ops, row["aten::add"], 12) == "fused by compiler");
  CHECK(cell<std::uint64_t>(ops, row["aten::add"], 10) == 2);
  CHECK(cell<double>(ops, row["aten::add"], 11) == doctest::Approx(101e-6));
  CHECK(cell<std::string>(ops, 0, 1) == "aten::mm");  // 300 ns, then aten::add's 101

  const Table& ck = test::table(r, "compiled_kernels");
  REQUIRE(ck.rows().size() == 2);
  CHECK(cell<std::string>(ck, 0, 0) == "triton_poi_fused_add_relu_0");
  CHECK(cell<std::string>(ck, 0, 1) == "cq7abc");
  CHECK(cell<std::string>(ck, 0, 2) == "fused by compiler");
  CHECK(cell<std::string>(ck, 0, 3) == "aten::add, aten::relu, aten::mul");
  CHECK(cell<std::uint64_t>(ck, 0, 4) == 2);
  CHECK(cell<std::uint64_t>(ck, 0, 5) == 2);
  CHECK(cell<double>(ck, 0, 6) == doctest::Approx(300e-6));
  CHECK(cell<std::string>(ck, 0, 7) == "/tmp/g/cgraph.py");
  CHECK(cell<std::string>(ck, 1, 0) == "triton_poi_fused_0");
  CHECK(cell<std::string>(ck, 1, 2) == "unattributed");
  CHECK(cell<std::string>(ck, 1, 3) == "");
}

TEST_CASE("OpSummary names each operator's line: the one whose calls of it took the most device "
          "time") {
  tools::OpSummary s;
  auto at = [](std::uint64_t id, std::string_view op, std::string_view line) {
    return OpBegin{.id = id, .name = intern(op), .thread = 1, .source = intern(line)};
  };
  s.on(at(1, "aten::mm", "model.py:10"));
  s.on(at(2, "aten::mm", "model.py:20"));
  s.on(at(3, "aten::mm", "model.py:20"));
  s.on(OpBegin{.id = 4, .name = intern("aten::add"), .thread = 1});  // no line known
  s.on(kernel(1, "gemm", 1000, 1500));
  s.on(kernel(2, "gemm", 2000, 2300));
  s.on(kernel(3, "gemm", 3000, 3300));  // line 20: 600 ns, line 10: 500 ns
  s.on(kernel(4, "add", 4000, 4010));
  Report r("op_summary");
  s.report(r);
  const auto& ops = test::table(r, "operators");
  CHECK(test::text(ops, 0, "operator") == "aten::mm");
  CHECK(test::text(ops, 0, "top_line") == "model.py:20");
  CHECK(test::text(ops, 1, "top_line") == "");
}
