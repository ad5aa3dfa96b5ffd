#include <doctest/doctest.h>

#include <string>

#include <pasta/core/concepts.hpp>
#include <pasta/tools/module_summary.hpp>

#include "../support.hpp"

using namespace pasta;
using test::text;

static_assert(Tool<tools::ModuleSummary>);

namespace {
OpBegin op(std::uint64_t id, std::string_view name, std::string_view module,
           std::string_view source = {}, bool backward = false) {
  return {.id = id,
          .name = intern(name),
          .thread = 1,
          .module = module.empty() ? NameId{} : intern(module),
          .source = source.empty() ? NameId{} : intern(source),
          .backward = static_cast<std::uint8_t>(backward)};
}
KernelComplete kernel(std::uint64_t op, std::string_view name, std::uint64_t ns) {
  return {.name = intern(name), .start_ns = 1000, .end_ns = 1000 + ns, .op = op};
}
ModuleCall call(std::string_view module, std::string_view parent, std::string_view cls,
                std::uint32_t depth, std::uint64_t begin, std::uint64_t end,
                std::string_view source = {}) {
  return {.module = intern(module),
          .parent = parent.empty() ? NameId{} : intern(parent),
          .class_name = intern(cls),
          .source = source.empty() ? NameId{} : intern(source),
          .thread = 1,
          .depth = depth,
          .begin_ns = begin,
          .end_ns = end};
}
}  // namespace

// A two-block model, its forward and backward: every number below is the
// sum of the kernels this test hands the tool, by hand.
TEST_CASE("ModuleSummary charges kernels to the module of their operator, self and total") {
  tools::ModuleSummary s;
  // Forward: Net.blocks.0.fc (2 kernels), Net.blocks.1.fc (1), Net.head (1).
  s.on(op(1, "aten::linear", "Net.blocks.0.fc", "model.py:10"));
  s.on(op(2, "aten::addmm", "Net.blocks.0.fc", "model.py:10"));
  s.on(op(3, "aten::linear", "Net.blocks.1.fc", "model.py:10"));
  s.on(op(4, "aten::add", "Net.blocks.1", "model.py:11"));
  s.on(op(5, "aten::linear", "Net.head", "model.py:20"));
  s.on(op(6, "aten::mse_loss", "", "train.py:5"));
  // Backward of blocks.0.fc's linear: its forward's module and line.
  s.on(op(7, "autograd::engine::evaluate_function: AddmmBackward0", "Net.blocks.0.fc",
          "model.py:10", true));
  s.on(call("Net.blocks.0.fc", "Net.blocks.0", "Linear", 2, 100, 150, "model.py:10"));
  s.on(call("Net.blocks.0", "Net", "Block", 1, 90, 160, "model.py:30"));
  s.on(call("Net.blocks.1.fc", "Net.blocks.1", "Linear", 2, 170, 200, "model.py:10"));
  s.on(call("Net.blocks.1", "Net", "Block", 1, 165, 230, "model.py:30"));
  s.on(call("Net.head", "Net", "Linear", 1, 240, 260, "model.py:31"));
  s.on(call("Net", "", "Net", 0, 80, 300, "train.py:4"));
  s.on(kernel(2, "gemm", 400));
  s.on(kernel(1, "bias", 100));
  s.on(kernel(3, "gemm", 300));
  s.on(kernel(4, "add", 50));
  s.on(kernel(5, "gemm", 200));
  s.on(kernel(6, "mse", 30));
  s.on(kernel(7, "gemm_bwd", 700));
  s.on(kernel(0, "stray", 5));  // launched outside every operator
  s.on(Memcpy{.bytes = 8, .start_ns = 0, .end_ns = 20, .op = 5});
  s.on(TensorAlloc{.bytes = 1024, .total_allocated = 4096, .op = 2});
  s.on(TensorAlloc{.bytes = 512, .total_allocated = 8192, .op = 3});

  const auto* fc0 = s.stats("Net.blocks.0.fc");
  REQUIRE(fc0);
  CHECK(fc0->calls == 1);
  CHECK(fc0->ops == 3);
  CHECK(fc0->launches == 3);
  CHECK(fc0->device_ns == 1200);
  CHECK(fc0->forward_ns == 500);
  CHECK(fc0->backward_ns == 700);
  CHECK(fc0->host_ns == 50);
  CHECK(fc0->alloc_bytes == 1024);
  CHECK(fc0->peak_bytes == 4096);
  CHECK(s.device_total_ns("Net.blocks.0.fc") == 1200);
  CHECK(s.device_total_ns("Net.blocks.0") == 1200);
  CHECK(s.device_total_ns("Net.blocks.1") == 350);  // fc 300 + its own add 50
  CHECK(s.device_total_ns("Net") == 1200 + 350 + 200);
  CHECK(s.device_total_ns("(no module)") == 35);  // mse_loss and the stray kernel
  const auto* line10 = s.line("model.py:10");
  REQUIRE(line10);
  CHECK(line10->device_ns == 400 + 100 + 300 + 700);
  CHECK(line10->calls == 4);

  const Report r = test::report_of(s);
  const auto& modules = test::table(r, "modules");
  // Depth first: Net, then its children by total device time.
  REQUIRE(modules.rows().size() == 7);
  CHECK(text(modules, 0, "module") == "Net");
  CHECK(text(modules, 1, "module") == "Net.blocks.0");
  CHECK(text(modules, 2, "module") == "Net.blocks.0.fc");
  CHECK(text(modules, 3, "module") == "Net.blocks.1");
  CHECK(text(modules, 4, "module") == "Net.blocks.1.fc");
  CHECK(text(modules, 5, "module") == "Net.head");
  CHECK(text(modules, 6, "module") == "(no module)");
  CHECK(text(modules, 0, "device_ns_total") == "1750");
  CHECK(text(modules, 0, "launches_total") == "6");
  CHECK(text(modules, 2, "class") == "Linear");
  CHECK(text(modules, 2, "parent") == "Net.blocks.0");
  CHECK(text(modules, 0, "peak_bytes") == "8192");
  CHECK(text(modules, 0, "alloc_bytes") == "1536");
  CHECK(text(modules, 5, "copies") == "1");
  CHECK(text(modules, 0, "source") == "train.py:4");
  const auto& kernels = test::table(r, "module_kernels");
  CHECK(text(kernels, 0, "module") == "Net.blocks.0.fc");
  CHECK(text(kernels, 0, "kernel") == "gemm_bwd");
  CHECK(text(kernels, 0, "device_ns") == "700");
  const auto& lines = test::table(r, "lines");
  CHECK(text(lines, 0, "source") == "model.py:10");
  CHECK(text(lines, 0, "top_operator") ==
        "autograd::engine::evaluate_function: AddmmBackward0");
  CHECK(text(lines, 0, "module") == "Net.blocks.0.fc");
  CHECK(text(lines, 1, "source") == "model.py:20");
}

TEST_CASE("ModuleSummary: a module calling itself is timed once, and a module only operators "
          "named gets its parents from its name") {
  tools::ModuleSummary s;
  s.on(op(1, "aten::mul", "Tree.node"));
  s.on(op(2, "aten::mul", "Tree.node"));
  s.on(kernel(1, "mul", 10));
  s.on(kernel(2, "mul", 10));
  s.on(call("Tree.node", "Tree.node", "Node", 2, 20, 30));  // the inner, recursive call
  s.on(call("Tree.node", "Tree", "Node", 1, 10, 40));
  const auto* node = s.stats("Tree.node");
  REQUIRE(node);
  CHECK(node->calls == 2);
  CHECK(node->host_ns == 30);
  CHECK(node->parent == intern("Tree"));
  CHECK(s.device_total_ns("Tree") == 20);

  tools::ModuleSummary t;  // no module calls at all (a window that opened inside them)
  t.on(op(1, "aten::mul", "A.b.c"));
  t.on(kernel(1, "mul", 10));
  CHECK(t.device_total_ns("A") == 10);
  CHECK(t.device_total_ns("A.b") == 10);
  const Report r = test::report_of(t);
  CHECK(test::table(r, "modules").rows().size() == 3);
}

TEST_CASE("ModuleSummary: a program without modules has empty tables and says why") {
  tools::ModuleSummary s;
  s.on(op(1, "aten::mul", ""));
  s.on(kernel(1, "mul", 10));
  const Report r = test::report_of(s);
  CHECK(test::table(r, "modules").rows().empty());
  CHECK(test::table(r, "module_kernels").rows().empty());
  CHECK(s.device_total_ns("(no module)") == 10);
  REQUIRE(r.notes().size() == 1);
  CHECK(r.notes()[0].find("Python 3.12") != std::string::npos);
}
