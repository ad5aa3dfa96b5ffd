#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include <pasta/core/names.hpp>
#include <pasta/tools/detail/stall_forest.hpp>

using pasta::detail::BlameNode;

TEST_CASE("stall forest: dot nodes sized by their share, linked to their parent, quotes escaped") {
  BlameNode root;
  BlameNode& allocation = root.child("allocation #1");
  allocation.samples = 60;
  allocation.child("aten::mm").samples = 60;
  root.child("tensor \"q\"").samples = 40;
  CHECK(&root.child("allocation #1") == &root.children.front());  // found, not added again
  root.sort();
  CHECK(pasta::detail::forest_dot(root, 100) ==
        "digraph stall_blame {\n  rankdir=LR;\n  node [shape=box, style=filled];\n"
        "  n0 [label=\"allocation #1\\n60 samples (60.0%)\", width=4.60, fontsize=18, "
        "fillcolor=\"0.0 0.64 1.0\"];\n"
        "  n1 [label=\"aten::mm\\n60 samples (60.0%)\", width=4.60, fontsize=18, "
        "fillcolor=\"0.0 0.64 1.0\"];\n"
        "  n0 -> n1;\n"
        "  n2 [label=\"tensor \\\"q\\\"\\n40 samples (40.0%)\", width=3.40, fontsize=16, "
        "fillcolor=\"0.0 0.46 1.0\"];\n"
        "}\n");
}

TEST_CASE("stall forest: the icicle escapes labels and leaves out nodes under a pixel wide") {
  BlameNode root;
  root.child("a<b>").samples = 1199.6;
  root.child("tiny").samples = 0.4;
  const std::string svg = pasta::detail::forest_svg(root, 1200);
  CHECK(svg.find("width=\"1200\" height=\"70\"") != std::string::npos);  // one row
  CHECK(svg.find("<title>a&lt;b&gt; - 1200 samples (100.0%)</title>") != std::string::npos);
  CHECK(svg.find(">a&lt;b&gt;</text>") != std::string::npos);
  CHECK(svg.find("tiny") == std::string::npos);
  CHECK(svg.ends_with("</svg>\n"));
}

TEST_CASE("stall forest: a view under its tensor under its allocation, then who waited") {
  using namespace pasta::detail::stall;
  Targets t;
  const std::uint32_t a = t.add({.base = 0x1000, .bytes = 0x1000});
  const std::uint32_t x = t.add({.base = 0x1000, .bytes = 64, .kind = Target::tensor, .parent = a});
  const std::uint32_t v = t.add({.base = 0x1010,
                                 .bytes = 16,
                                 .kind = Target::view,
                                 .parent = x,
                                 .layout = pasta::intern("float[4] strides [1]"),
                                 .element_bytes = 4});
  const pasta::NameId mm = pasta::intern("aten::mm");
  const std::map<std::pair<AccessKey, std::string>, double> blamed{
      {{{v, mm}, "_Z4gemmv"}, 5}, {{{x, {}}, "_Z4gemmv"}, 2}, {{{no_target, {}}, "k"}, 1}};
  const BlameNode forest = blame_forest(blamed, t);
  REQUIRE(forest.children.size() == 2);
  const BlameNode& allocation = forest.children[0];
  CHECK(allocation.label == "allocation #1 (4096 B at 0x1000)");
  CHECK(allocation.samples == 7);
  REQUIRE(allocation.children.size() == 1);
  const BlameNode& tensor = allocation.children[0];
  CHECK(tensor.samples == 7);
  REQUIRE(tensor.children.size() == 2);  // the view (5), then the kernel that read the tensor (2)
  CHECK(tensor.children[0].label == "view float[4] strides [1] at +16 B");
  CHECK(tensor.children[0].children.at(0).label == "aten::mm");
  CHECK(tensor.children[1].label == "gemm");
  CHECK(tensor.children[1].samples == 2);
  CHECK(forest.children[1].label == "(no allocation: shared, local or unknown memory)");
}

TEST_CASE("stall forest: pruned to each node's largest children, the rest summed in one leaf") {
  BlameNode root;
  for (int i = 0; i < 10; ++i) {
    BlameNode& t = root.child("tensor #" + std::to_string(i));
    t.samples = 100 - i;
    t.child("aten::mm").samples = 100 - i;
  }
  root.child("tiny").samples = 0.5;
  pasta::detail::stall::prune(root, 6, 1.0);
  REQUIRE(root.children.size() == 7);
  CHECK(root.children[5].label == "tensor #5");
  CHECK(root.children[6].label == "(5 more)");
  CHECK(root.children[6].samples == 94 + 93 + 92 + 91 + 0.5);
  CHECK(root.children[6].children.empty());
  CHECK(root.children[0].children.size() == 1);  // a single child is kept, never merged alone
  // A node with one child under the threshold besides the kept ones keeps it too.
  BlameNode two;
  two.child("big").samples = 50;
  two.child("small").samples = 0.1;
  pasta::detail::stall::prune(two, 6, 1.0);
  CHECK(two.children.size() == 2);
  CHECK(two.children[1].label == "small");
}
