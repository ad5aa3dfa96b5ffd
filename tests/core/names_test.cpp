#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include <pasta/core/detail/name_table.hpp>
#include <pasta/core/names.hpp>

using namespace pasta;

TEST_CASE("interning gives one id per distinct string and 0 for the empty string") {
  NameTable t;
  const NameId a = t.intern("vectorAdd");
  const NameId b = t.intern("matmul");
  CHECK(a.value == 1);
  CHECK(b.value == 2);
  CHECK(t.intern("vectorAdd") == a);
  CHECK(t.intern("") == NameId{});
  CHECK(t.view(a) == "vectorAdd");
  CHECK(t.view(NameId{}) == "");
  CHECK(t.view(NameId{99}) == "");
  CHECK(t.size() == 3);
}

TEST_CASE("interned views stay valid while the table grows") {
  NameTable t;
  const std::string_view first = t.view(t.intern("first"));
  for (int i = 0; i < 10000; ++i) t.intern("name" + std::to_string(i));
  CHECK(first == "first");
  CHECK(first.data() == t.view(t.intern("first")).data());
}

TEST_CASE("threads interning the same names agree on their ids") {
  NameTable t;
  std::vector<std::vector<NameId>> seen(8);
  std::vector<std::thread> threads;
  for (int k = 0; k < 8; ++k)
    threads.emplace_back([&, k] {
      for (int i = 0; i < 500; ++i) seen[k].push_back(t.intern("kernel" + std::to_string(i)));
    });
  for (auto& th : threads) th.join();
  for (int k = 1; k < 8; ++k) CHECK(seen[k] == seen[0]);
  CHECK(t.size() == 501);
}
