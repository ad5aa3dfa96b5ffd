#include <doctest/doctest.h>

#include <pasta/core/concepts.hpp>
#include <pasta/tools/tensor_hotness.hpp>

#include "../support.hpp"

using namespace pasta;
using test::cell;

static_assert(Tool<tools::TensorHotness>);

namespace {
pasta::TensorAlloc alloc(std::uint64_t address, std::uint64_t bytes, std::uint64_t op = 0) {
  return {.address = address, .bytes = bytes, .op = op, .thread = 3};
}
AccessHistogram bin(std::uint64_t address, std::uint32_t bytes, std::uint64_t reads,
                    std::uint64_t writes) {
  return {.address = address,
          .bin_bytes = bytes,
          .reads = reads,
          .writes = writes,
          .read_bytes = 4 * reads,
          .write_bytes = 4 * writes};
}
}  // namespace

TEST_CASE("TensorHotness charges each bin to the tensor holding its first byte") {
  tools::TensorHotness h;
  h.on(OpBegin{.id = 1, .name = intern("aten::empty"), .thread = 3});
  h.on(alloc(0x10000, 4096, 1));  // #1
  h.on(alloc(0x11000, 1024, 1));  // #2
  h.on(OpEnd{.id = 1, .thread = 3});
  h.on(OpBegin{.id = 2, .name = intern("aten::add"), .thread = 3});
  h.on(alloc(0x11400, 2048, 2));  // #3
  h.on(OpEnd{.id = 2, .thread = 3});
  h.on(alloc(0x20000, 512));  // #4, never touched
  h.on(bin(0x10000, 1024, 10, 0));
  h.on(bin(0x10c00, 1024, 0, 2));        // ends exactly at #1's end
  h.on(bin(0x11000, 1024, 3, 1));        // all of #2
  h.on(bin(0x11400, 4096, 5, 0));        // starts in #3 and runs 2 KiB past it
  h.on(bin(0x30000, 1024, 7, 0));        // in no tensor
  h.on(TensorFree{.address = 0x11000});  // #2 is gone; its row stays
  h.on(TensorFree{.address = 0x20000});  // #4 had no accesses: no row

  const auto* t1 = h.tensor(1);
  REQUIRE(t1);
  CHECK(t1->counts.reads == 10);
  CHECK(t1->counts.writes == 2);
  CHECK(t1->counts.read_bytes == 40);
  CHECK(t1->counts.write_bytes == 8);
  CHECK(name_of(t1->op) == "aten::empty");
  REQUIRE(h.tensor(2));
  CHECK_FALSE(h.tensor(2)->live);
  CHECK(h.tensor(2)->counts.accesses() == 4);
  CHECK(h.tensor(3)->counts.accesses() == 5);
  CHECK(h.tensor(4) == nullptr);
  CHECK(h.tensors_accessed() == 3);
  CHECK(h.shared_bins() == 1);
  CHECK(h.outside().reads == 7);
  CHECK(h.op_stats("aten::empty").tensors == 2);
  CHECK(h.op_stats("aten::empty").counts.accesses() == 16);
  CHECK(h.op_stats("aten::add").counts.read_bytes == 20);
  CHECK(h.op_stats("(no operator)").tensors == 0);

  Report r("tensor_hotness");
  h.report(r);
  auto sum = test::summary(r);
  CHECK(std::get<std::uint64_t>(sum["tensors allocated"]) == 4);
  CHECK(std::get<std::uint64_t>(sum["tensors accessed"]) == 3);
  CHECK(std::get<std::uint64_t>(sum["accesses"]) == 12 + 4 + 5 + 7);
  CHECK(std::get<std::uint64_t>(sum["bytes accessed"]) == 48 + 16 + 20 + 28);
  CHECK(std::get<std::uint64_t>(sum["bins shared with the next tensor"]) == 1);
  CHECK(std::get<std::uint64_t>(sum["accesses outside any tensor"]) == 7);
  REQUIRE(r.notes().size() == 1);
  CHECK(r.notes()[0].find("PASTA_PAGE_BYTES=512") != std::string::npos);

  const Table& t = test::table(r, "tensors");
  REQUIRE(t.rows().size() == 3);
  CHECK(cell<std::uint64_t>(t, 0, 0) == 1);
  CHECK(cell<std::string>(t, 0, 1) == "#1");
  CHECK(cell<std::uint64_t>(t, 0, 2) == 0);
  CHECK(cell<std::string>(t, 0, 3) == "0x10000");
  CHECK(cell<std::uint64_t>(t, 0, 4) == 4096);
  CHECK(cell<std::string>(t, 0, 5) == "aten::empty");
  CHECK(cell<std::uint64_t>(t, 0, 6) == 12);
  CHECK(cell<std::uint64_t>(t, 0, 7) == 10);
  CHECK(cell<std::uint64_t>(t, 0, 8) == 2);
  CHECK(cell<std::uint64_t>(t, 0, 9) == 40);
  CHECK(cell<std::uint64_t>(t, 0, 10) == 8);
  CHECK(cell<std::string>(t, 1, 1) == "#3");
  CHECK(cell<std::string>(t, 1, 5) == "aten::add");
  CHECK(cell<std::string>(t, 2, 1) == "#2");
  CHECK(cell<std::uint64_t>(t, 2, 6) == 4);

  const Table& ops = test::table(r, "operators");
  REQUIRE(ops.rows().size() == 2);
  CHECK(cell<std::string>(ops, 0, 0) == "aten::empty");
  CHECK(cell<std::uint64_t>(ops, 0, 1) == 2);
  CHECK(cell<std::uint64_t>(ops, 0, 2) == 16);
  CHECK(cell<std::uint64_t>(ops, 0, 3) == 64);
  CHECK(cell<std::string>(ops, 1, 0) == "aten::add");
  CHECK(cell<std::uint64_t>(ops, 1, 1) == 1);
  CHECK(cell<std::uint64_t>(ops, 1, 2) == 5);
  CHECK(cell<std::uint64_t>(ops, 1, 3) == 20);
}

TEST_CASE("TensorHotness keeps a reused address apart, and ends tensors whose free was missed") {
  tools::TensorHotness h;
  h.on(alloc(0x1000, 256));  // #1
  h.on(bin(0x1000, 512, 1, 0));
  h.on(TensorFree{.address = 0x1000});
  h.on(alloc(0x1000, 256));  // #2 at the same address
  h.on(bin(0x1000, 512, 0, 3));
  h.on(alloc(0x1000, 4096));  // #3 over #2: #2's free was missed
  h.on(bin(0x1080, 512, 5, 0));
  CHECK(h.tensor(1)->counts.reads == 1);
  CHECK(h.tensor(2)->counts.writes == 3);
  CHECK_FALSE(h.tensor(2)->live);
  CHECK(h.tensor(3)->counts.reads == 5);
  CHECK(h.tensor(3)->live);
  CHECK(h.shared_bins() == 2);  // 512-byte bins over the two 256-byte tensors
}

TEST_CASE("TensorHotness keeps rows for at most max_tensors freed tensors, and says so") {
  tools::TensorHotness h(2);
  for (std::uint64_t i = 0; i < 3; ++i) {
    h.on(alloc(0x1000, 64));
    h.on(bin(0x1000, 64, i + 1, 0));
    h.on(TensorFree{.address = 0x1000});
  }
  h.on(alloc(0x1000, 64));  // live tensors always have a row
  h.on(bin(0x1000, 64, 10, 0));
  CHECK(h.not_kept() == 1);
  CHECK(h.tensors_accessed() == 4);
  CHECK(h.tensor(3) == nullptr);
  CHECK(h.op_stats("(no operator)").tensors == 4);
  CHECK(h.op_stats("(no operator)").counts.reads == 1 + 2 + 3 + 10);

  Report r("tensor_hotness");
  h.report(r);
  const Table& t = test::table(r, "tensors");
  REQUIRE(t.rows().size() == 3);
  CHECK(cell<std::string>(t, 0, 1) == "#4");
  CHECK(cell<std::string>(t, 1, 1) == "#2");
  CHECK(cell<std::string>(t, 2, 1) == "#1");
  REQUIRE(r.notes().size() == 1);
  CHECK(r.notes()[0].find("1 accessed tensors freed after the first 2") != std::string::npos);
  const Table& ops = test::table(r, "operators");
  REQUIRE(ops.rows().size() == 1);
  CHECK(cell<std::uint64_t>(ops, 0, 2) == 16);
}

TEST_CASE("TensorHotness names the line of the program that made each hot tensor") {
  tools::TensorHotness h;
  h.on(OpBegin{.id = 1, .name = intern("aten::empty"), .thread = 3,
               .source = intern("train.py:7")});
  h.on(alloc(0x1000, 4096, 1));
  h.on(OpEnd{.id = 1, .thread = 3});
  h.on(bin(0x1000, 4096, 8, 0));
  Report r("tensor_hotness");
  h.report(r);
  CHECK(test::text(test::table(r, "tensors"), 0, "line") == "train.py:7");
}
