#include <doctest/doctest.h>

#include <string>

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
