// Reading Inductor's kernel metadata back from a compiled graph's module; the
// module text is laid out as PyTorch 2.11's wrapper codegen writes it
// (torch/_inductor/codegen/triton.py _emit_kernel_to_wrapper, utils.py
// get_kernel_metadata).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <pasta/torch/detail/inductor_wrapper.hpp>

using namespace pasta::torch::detail;

namespace {
constexpr std::string_view module = R"(
from torch._inductor.runtime.triton_heuristics import start_graph, end_graph
async_compile = AsyncCompile()


# kernel path: /tmp/torchinductor_root/q7/cq7abc.py
# Topologically Sorted Source Nodes: [x, relu], Original ATen: [aten.add, aten.relu]
# Source node to ATen node mapping:
#   relu => relu
#   x => add
# Graph fragment:
#   %add : Tensor "f32[4][1]cuda:0" = call_function[target=torch.ops.aten.add.Tensor]
triton_poi_fused_add_relu_0 = async_compile.triton('triton_poi_fused_add_relu_0', '''
import triton
# kernel path: not a comment of the wrapper
@triton.jit
def triton_poi_fused_add_relu_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
''', device_str='cuda')


# kernel path: /tmp/torchinductor_root/zz/czzfill.py
# Topologically Sorted Source Nodes: [], Original ATen: []
# Source node to ATen node mapping:
triton_poi_fused_0 = async_compile.triton('triton_poi_fused_0', '''
@triton.jit
def triton_poi_fused_0(out_ptr0, xnumel, XBLOCK : tl.constexpr):
''', device_str='cuda')


# kernel path: /tmp/torchinductor_root/ab/cabsoftmax.py
# Unsorted Source Nodes: [sm], Original ATen: [aten._softmax, aten.native_dropout, prims.inductor_random]
triton_per_fused__softmax_native_dropout_1 = async_compile.triton('triton_per_fused__softmax_native_dropout_1', '''
@triton.jit
def triton_per_fused__softmax_native_dropout_1(in_ptr0):
''', device_str='cuda')

async_compile.wait(globals())
del async_compile
)";
}  // namespace

TEST_CASE("Inductor's wrapper module: each Triton kernel with its source hash and fused operators") {
  const std::vector<InductorKernel> k = inductor_kernels(module);
  REQUIRE(k.size() == 3);
  CHECK(k[0].name == "triton_poi_fused_add_relu_0");
  CHECK(k[0].path == "/tmp/torchinductor_root/q7/cq7abc.py");
  CHECK(k[0].source == "cq7abc");
  CHECK(k[0].fused == std::vector<std::string>{"aten.add", "aten.relu"});
  SUBCASE("a kernel whose metadata names no operator") {
    CHECK(k[1].name == "triton_poi_fused_0");
    CHECK(k[1].source == "czzfill");
    CHECK(k[1].fused.empty());
  }
  SUBCASE("unsorted source nodes, prims and private operators") {
    CHECK(k[2].name == "triton_per_fused__softmax_native_dropout_1");
    CHECK(k[2].source == "cabsoftmax");
    CHECK(k[2].fused ==
          std::vector<std::string>{"aten._softmax", "aten.native_dropout", "prims.inductor_random"});
  }
}

TEST_CASE("Inductor's wrapper module: a definition without its comment block has no path") {
  const auto k = inductor_kernels(
      "# kernel path: /c/a.py\n"
      "# Topologically Sorted Source Nodes: [x], Original ATen: [aten.mul]\n"
      "buf = empty()\n"
      "triton_poi_fused_mul_0 = async_compile.triton('triton_poi_fused_mul_0', '''\n"
      "'''\n");
  REQUIRE(k.size() == 1);
  CHECK(k[0].name == "triton_poi_fused_mul_0");
  CHECK(k[0].path.empty());
  CHECK(k[0].fused.empty());
}

TEST_CASE("Inductor's wrapper module: each launch with the module and frames torch::Aten added") {
  // One kernel launched for two blocks (Inductor defined its code once), a
  // matrix product between, and a launch compiled before pasta watched.
  const auto sites = inductor_call_sites(
      "# kernel path: /c/ab/cab.py\n"
      "# Topologically Sorted Source Nodes: [layer_norm], Original ATen: [aten.native_layer_norm]\n"
      "# pasta module: root= path=h.0.ln class=LayerNorm\n"
      "triton_per_fused_native_layer_norm_0 = async_compile.triton('triton_per_fused_native_layer_norm_0', '''\n"
      "@triton.jit\n"
      "def triton_per_fused_native_layer_norm_0(in_ptr0):\n"
      "    x.run(1)\n"
      "''', device_str='cuda')\n"
      "def call(args):\n"
      "    with torch.cuda._DeviceGuard(0):\n"
      "        buf0 = empty_strided_cuda((4, 8), (8, 1), torch.float32)\n"
      "        # Topologically Sorted Source Nodes: [layer_norm], Original ATen: [aten.native_layer_norm]\n"
      "# pasta module: root= path=h.0.ln class=LayerNorm\n"
      "# pasta frames: /m/gpt2.py:388;/m/gpt2.py:920\n"
      "        stream0 = get_raw_stream(0)\n"
      "        triton_per_fused_native_layer_norm_0.run(buf0, 32, stream=stream0)\n"
      "        # Topologically Sorted Source Nodes: [linear], Original ATen: [aten.addmm]\n"
      "# pasta module: root= path=h.0.fc class=Linear\n"
      "        extern_kernels.addmm(buf1, buf0, buf2, alpha=1, beta=1, out=buf3)\n"
      "        # Topologically Sorted Source Nodes: [layer_norm_1], Original ATen: [aten.native_layer_norm]\n"
      "# pasta module: root=Net path=h.1.ln class=LayerNorm\n"
      "        triton_per_fused_native_layer_norm_0.run(buf3,\n"
      "            32, stream=stream0)\n"
      "        # Topologically Sorted Source Nodes: [x], Original ATen: [aten.mul]\n"
      "        triton_poi_fused_mul_1.run(buf3, 32, stream=stream0)\n");
  REQUIRE(sites.size() == 4);
  CHECK(sites[0].kernel == "triton_per_fused_native_layer_norm_0");
  CHECK_FALSE(sites[0].external);
  CHECK(sites[0].line == 16);
  CHECK(sites[0].has_module);
  CHECK(sites[0].module_root.empty());
  CHECK(sites[0].module_path == "h.0.ln");
  CHECK(sites[0].module_class == "LayerNorm");
  CHECK(sites[0].frames == std::vector<std::string>{"/m/gpt2.py:388", "/m/gpt2.py:920"});
  SUBCASE("the product is an extern kernel's site, with its own lines") {
    CHECK(sites[1].kernel == "extern_kernels.addmm");
    CHECK(sites[1].external);
    CHECK(sites[1].line == 19);
    CHECK(sites[1].module_path == "h.0.fc");
    CHECK(sites[1].module_class == "Linear");
  }
  SUBCASE("the same kernel for another block") {
    CHECK(sites[2].kernel == "triton_per_fused_native_layer_norm_0");
    CHECK(sites[2].line == 22);
    CHECK(sites[2].module_root == "Net");
    CHECK(sites[2].module_path == "h.1.ln");
    CHECK(sites[2].frames.empty());
  }
  SUBCASE("compiled before pasta watched: no module") {
    CHECK(sites[3].kernel == "triton_poi_fused_mul_1");
    CHECK(sites[3].line == 25);
    CHECK_FALSE(sites[3].has_module);
  }
}

TEST_CASE("Inductor's wrapper module: a launch found by its source hash or name, and its place") {
  const InductorGraph graph = inductor_graph(
      "# kernel path: /c/ab/cab.py\n"                                                      // 1
      "# Topologically Sorted Source Nodes: [x], Original ATen: [aten.mul]\n"              // 2
      "triton_poi_fused_mul_0 = async_compile.triton('triton_poi_fused_mul_0', '''\n"      // 3
      "''', device_str='cuda')\n"                                                          // 4
      "# kernel path: /c/cd/ccd.py\n"                                                      // 5
      "# Topologically Sorted Source Nodes: [y], Original ATen: [aten.add]\n"              // 6
      "triton_poi_fused_add_1 = async_compile.triton('triton_poi_fused_add_1', '''\n"      // 7
      "''', device_str='cuda')\n"                                                          // 8
      "def call(args):\n"                                                                  // 9
      "    # Topologically Sorted Source Nodes: [x], Original ATen: [aten.mul]\n"          // 10
      "# pasta module: root= path=a class=A\n"                                             // 11
      "    triton_poi_fused_mul_0.run(buf0, 8, stream=stream0)\n"                          // 12
      "    # Topologically Sorted Source Nodes: [y], Original ATen: [aten.add]\n"          // 13
      "# pasta module: root= path=b class=B\n"                                             // 14
      "    triton_poi_fused_mul_0.run(buf1,\n"                                             // 15
      "        8, stream=stream0)\n"                                                       // 16
      "    triton_poi_fused_add_1.run(buf1, 8, stream=stream0)\n");                        // 17
  REQUIRE(graph.kernels.size() == 2);
  REQUIRE(graph.sites.size() == 3);
  const InductorLaunch first = find_launch(graph, "triton_poi_fused_mul_0", "cab", 12);
  REQUIRE(first.kernel != nullptr);
  CHECK(first.kernel->fused == std::vector<std::string>{"aten.mul"});
  CHECK_FALSE(first.by_name);
  REQUIRE(first.site != nullptr);
  CHECK(first.site->module_path == "a");
  SUBCASE("the same kernel's second launch, reported from the call's second line") {
    const InductorLaunch second = find_launch(graph, "triton_poi_fused_mul_0", "cab", 16);
    REQUIRE(second.site != nullptr);
    CHECK(second.site->line == 15);
    CHECK(second.site->module_path == "b");
  }
  SUBCASE("a source hash the module does not list: found by name; a launch without lines") {
    const InductorLaunch add = find_launch(graph, "triton_poi_fused_add_1", "cother", 17);
    REQUIRE(add.kernel != nullptr);
    CHECK(add.by_name);
    REQUIRE(add.site != nullptr);
    CHECK_FALSE(add.site->has_module);
  }
  SUBCASE("a line above every launch of the kernel, and a kernel the module lacks") {
    CHECK(find_launch(graph, "triton_poi_fused_add_1", "ccd", 12).site == nullptr);
    const InductorLaunch none = find_launch(graph, "triton_poi_fused_sub_2", "cxyz", 17);
    CHECK(none.kernel == nullptr);
    CHECK(none.site == nullptr);
  }
}

TEST_CASE("Inductor's wrapper module: extern kernels' calls, found by their line") {
  CHECK(extern_callee("extern_kernels.mm(buf0, buf1, out=buf2)") == "extern_kernels.mm");
  CHECK(extern_callee("buf5 = torch.ops.aten._scaled_dot_product_flash_attention.default(buf2)") ==
        "torch.ops.aten._scaled_dot_product_flash_attention.default");
  CHECK(extern_callee("buf3 = empty_strided_cuda((4, 8), (8, 1), torch.float32)").empty());
  CHECK(extern_callee("stream0 = get_raw_stream(0)").empty());
  CHECK(extern_callee("triton_poi_fused_mul_0.run(buf0, 8, stream=stream0)").empty());
  const InductorGraph graph = inductor_graph(
      "def call(args):\n"                                                                   // 1
      "    buf0 = empty_strided_cuda((4, 8), (8, 1), torch.float32)\n"                      // 2
      "    # Topologically Sorted Source Nodes: [linear], Original ATen: [aten.mm]\n"      // 3
      "# pasta module: root= path=h.0.attn.c_attn class=Conv1D\n"                           // 4
      "# pasta frames: /m/pytorch_utils.py:120;/m/gpt2.py:300\n"                            // 5
      "    extern_kernels.mm(buf0, primals_2, out=buf1)\n"                                  // 6
      "    # Topologically Sorted Source Nodes: [sdpa], Original ATen: [aten._sdpa]\n"      // 7
      "# pasta module: root= path=h.0.attn class=GPT2Attention\n"                           // 8
      "    buf2 = torch.ops.aten._scaled_dot_product_flash_attention.default(buf1)\n"       // 9
      "    buf3 = buf2[0]\n"                                                                 // 10
      "    # Topologically Sorted Source Nodes: [out], Original ATen: [aten.mm]\n"          // 11
      "    extern_kernels.mm(buf3, primals_3, out=buf4)\n");                                // 12
  REQUIRE(graph.sites.size() == 2);
  const InductorCallSite* mm = find_extern(graph, 6);
  REQUIRE(mm != nullptr);
  CHECK(mm->kernel == "extern_kernels.mm");
  CHECK(mm->module_path == "h.0.attn.c_attn");
  CHECK(mm->frames == std::vector<std::string>{"/m/pytorch_utils.py:120", "/m/gpt2.py:300"});
  const InductorCallSite* sdpa = find_extern(graph, 9);
  REQUIRE(sdpa != nullptr);
  CHECK(sdpa->module_path == "h.0.attn");
  CHECK(sdpa->frames.empty());
  SUBCASE("an allocation, an extern call without pasta's lines, a line between") {
    CHECK(find_extern(graph, 2) == nullptr);
    CHECK(find_extern(graph, 12) == nullptr);
    CHECK(find_extern(graph, 5) == nullptr);
  }
}

TEST_CASE("Inductor's names for operators, as operator events spell them") {
  CHECK(operator_event_name("aten.add") == "aten::add");
  CHECK(operator_event_name("aten._softmax") == "aten::_softmax");
  CHECK(operator_event_name("prims.inductor_random") == "prims::inductor_random");
  CHECK(operator_event_name("auto_functionalized") == "auto_functionalized");
  CHECK(operator_event_name("aten::add") == "aten::add");
  CHECK(source_hash("/tmp/t/ab/cabc.py") == "cabc");
  CHECK(source_hash("cabc") == "cabc");
}
