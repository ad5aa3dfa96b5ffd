// Which operator a CUDA graph's device work is charged to: the one current
// when each node was captured, through the copies instantiation makes
// (nv/cupti/detail/graph_ops.hpp), checked without a GPU.
#include <doctest/doctest.h>

#include <pasta/nv/cupti/detail/graph_ops.hpp>

using namespace pasta::nv::detail;

TEST_CASE("a graph launch's records are charged to the operators current at capture") {
  GraphOps g;
  // Stream capture into graph 1: nodes 10 and 11 inside operator 7, node 12 inside 8, node 13
  // outside every operator.
  g.created(10, 1, 7);
  g.created(11, 1, 7);
  g.created(12, 1, 8);
  g.created(13, 1, 0);
  CHECK(g.size() == 3);
  // Instantiation copies each node into executable graph 2 (ids 20..23).
  for (std::uint64_t i = 0; i < 4; ++i) g.cloned(20 + i, 2, 10 + i);
  CHECK(g.op_of(20) == 7);
  CHECK(g.op_of(21) == 7);
  CHECK(g.op_of(22) == 8);
  CHECK(g.op_of(23) == 0);
  // Two launches from operator 99: each record names its executable node.
  for (int launch = 0; launch < 2; ++launch)
    for (std::uint64_t node : {20, 21, 22, 23}) {
      const std::uint64_t want = node == 23 ? 99 : g.op_of(node);
      CHECK(g.charge(node, 99) == want);
    }
  CHECK(g.stats().created == 3);
  CHECK(g.stats().cloned == 3);
  CHECK(g.stats().records == 8);
  CHECK(g.stats().at_capture == 6);
  SUBCASE("a node unknown to pasta keeps its launch's operator") {
    CHECK(g.charge(12345, 42) == 42);
    CHECK(g.stats().at_capture == 6);
  }
}

TEST_CASE("a copy reported as created during instantiation keeps its original's operator") {
  GraphOps g;
  g.created(10, 1, 7);
  SUBCASE("created, then cloned") {
    g.created(20, 2, 55);  // instantiation inside operator 55
    g.cloned(20, 2, 10);
  }
  SUBCASE("cloned, then created") {
    g.cloned(20, 2, 10);
    g.created(20, 2, 55);
  }
  CHECK(g.op_of(20) == 7);
  // A copy of a node captured outside every operator has none.
  g.created(30, 2, 55);
  g.cloned(30, 2, 13);
  CHECK(g.op_of(30) == 0);
}

TEST_CASE("graph nodes outlive their graph: its launches' records come later") {
  GraphOps g;
  g.created(10, 1, 7);
  g.cloned(20, 2, 10);
  // The program destroys the graph and its executable graph; the worker then
  // processes the records of their last launches.
  CHECK(g.charge(20, 99) == 7);
  CHECK(g.charge(21, 99) == 99);  // a node never seen keeps its launch's operator
  CHECK(g.stats().records == 2);
  CHECK(g.stats().at_capture == 1);
}

TEST_CASE("graph nodes are bounded") {
  GraphOps g;
  for (std::uint64_t n = 1; n <= GraphOps::max_nodes; ++n) g.created(n, 1, 3);
  CHECK(g.size() == GraphOps::max_nodes);
  CHECK(g.stats().forgotten == 0);
  g.created(GraphOps::max_nodes + 1, 1, 3);
  CHECK(g.size() == 1);
  CHECK(g.stats().forgotten == GraphOps::max_nodes);
  CHECK(g.op_of(GraphOps::max_nodes + 1) == 3);
}
