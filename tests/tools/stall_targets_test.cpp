#include <doctest/doctest.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include <pasta/core/names.hpp>
#include <pasta/tools/detail/stall_targets.hpp>

using namespace pasta::detail::stall;

namespace {

Target view_of(std::uint32_t tensor, std::uint64_t address, std::uint64_t bytes,
               std::string_view layout) {
  Target v{.base = address,
           .bytes = bytes,
           .kind = Target::view,
           .parent = tensor,
           .layout = pasta::intern(layout),
           .element_bytes = 4};
  v.nested = pasta::detail::nested_dims(layout, v.dims);
  return v;
}

}  // namespace

TEST_CASE("stall targets: numbered per kind, a view labelled with the tensor it reads") {
  Targets t;
  const std::uint32_t a = t.add({.base = 0x1000, .bytes = 0x1000});
  const std::uint32_t b = t.add({.base = 0x8000, .bytes = 16});
  const std::uint32_t x = t.add({.base = 0x1000, .bytes = 96, .kind = Target::tensor, .parent = a});
  const std::uint32_t v = t.add(view_of(x, 0x1010, 64, "float[2, 4] strides [12, 1]"));
  CHECK(t[v].n == 1);
  CHECK(t.node_label(a) == "allocation #1 (4096 B at 0x1000)");
  CHECK(t.node_label(b) == "allocation #2 (16 B at 0x8000)");
  CHECK(t.node_label(x) == "tensor #1 (96 B, (no operator))");
  CHECK(t.node_label(v) == "view float[2, 4] strides [12, 1] at +16 B");
  CHECK(t.label(v) ==
        "tensor #1 (96 B, (no operator)) / view float[2, 4] strides [12, 1] at +16 B");
  CHECK(t.label(x) == t.node_label(x));
  CHECK(t.label(no_target) == "(no allocation: shared, local or unknown memory)");
}

TEST_CASE("stall targets: an access goes to the narrowest view holding it as an element") {
  // qkv, float[2, 12], split into q, k, v of float[2, 4]; `all` views it whole.
  Targets t;
  const std::uint64_t qkv = 0x1000;
  const std::uint32_t tensor = t.add({.base = qkv, .bytes = 96, .kind = Target::tensor});
  const std::uint32_t all = t.add(view_of(tensor, qkv, 96, "float[24] strides [1]"));
  const std::uint32_t q = t.add(view_of(tensor, qkv, 64, "float[2, 4] strides [12, 1]"));
  const std::uint32_t k = t.add(view_of(tensor, qkv + 16, 64, "float[2, 4] strides [12, 1]"));
  const std::vector<std::uint32_t> views{all, q, k};
  CHECK(t.view_at(tensor, qkv + (12 + 2) * 4, views) == q);  // in k's span, but a gap of k
  CHECK(t.view_at(tensor, qkv + (12 + 5) * 4, views) == k);  // k[1][1]
  CHECK(t.view_at(tensor, qkv + 9 * 4, views) == all);       // v[0][1]: neither q nor k
  CHECK(t.view_at(tensor, qkv + 9 * 4, {views.data() + 1, 2}) == tensor);  // without `all`
  CHECK(t.view_at(tensor, qkv, {}) == tensor);
  CHECK(t.view_at(7, qkv, views) == 7);  // views of another tensor
}
