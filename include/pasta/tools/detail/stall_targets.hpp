// What tools::StallBlame charges stalls to: allocations (the allocator's
// segments), tensors inside them and views of tensors, each with its label
// and the target it lies in.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/detail/region_key.hpp>
#include <pasta/core/names.hpp>
#include <pasta/tools/detail/live_ops.hpp>
#include <pasta/tools/detail/stall_join.hpp>

namespace pasta::detail {

// A view's layout, "Float[4, 8, 64] strides [1536, 192, 1]" (TensorView::
// layout), as (size, stride) pairs from the largest stride down, leaving
// out dimensions that do not move (size 1, stride 0). True when they nest:
// each stride steps past everything the smaller ones reach, so an element
// offset splits into one index per dimension (slices, transposes, splits,
// permutes do); false for a layout it cannot read or one whose rows
// overlap.
inline bool nested_dims(std::string_view layout, std::vector<region::Dim>& dims) {
  dims.clear();
  auto numbers = [&](std::size_t open, std::vector<std::uint64_t>& out) {
    const std::size_t close = layout.find(']', open);
    if (open == std::string_view::npos || close == std::string_view::npos) return false;
    for (std::size_t i = open + 1; i < close;) {
      while (i < close && (layout[i] == ' ' || layout[i] == ',')) ++i;
      if (i == close) break;
      std::uint64_t v = 0;
      const auto [end, ec] = std::from_chars(layout.data() + i, layout.data() + close, v);
      if (ec != std::errc()) return false;
      out.push_back(v);
      i = static_cast<std::size_t>(end - layout.data());
    }
    return true;
  };
  std::vector<std::uint64_t> sizes, strides;
  const std::size_t marker = layout.find("strides [");
  if (marker == std::string_view::npos || !numbers(layout.find('['), sizes) ||
      !numbers(marker + 8, strides) || sizes.size() != strides.size())
    return false;
  for (std::size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 1 && strides[d] > 0) dims.push_back({sizes[d], strides[d]});
  std::sort(dims.begin(), dims.end(), [](auto& a, auto& b) { return a.stride > b.stride; });
  std::uint64_t reach = 1;  // elements the smaller dimensions span
  for (std::size_t d = dims.size(); d-- > 0;) {
    if (dims[d].stride < reach) return false;
    reach = dims[d].stride * (dims[d].size - 1) + reach;
  }
  return true;
}

}  // namespace pasta::detail

namespace pasta::detail::stall {

// What a stall is blamed on: an allocation (the allocator's segment), a
// tensor (a framework allocation inside one) or a view of a tensor.
struct Target {
  struct Range {
    std::uint64_t base = 0, bytes = 0;
    std::uint32_t index = 0;
  };
  enum Kind : std::uint8_t { allocation, tensor, view };
  std::uint64_t base = 0, bytes = 0;
  NameId op{};      // the allocating operator (tensors)
  NameId source{};  // the line of the program that called it (tensors); 0 = not known
  Kind kind = allocation;
  std::uint32_t parent = no_target;  // the allocation of a tensor, the tensor of a view
  std::uint64_t n = 0;               // 1 for the first target of its kind
  // Views: the layout, and its dimensions (size, stride in elements)
  // from the largest stride down when they nest (each stride steps over
  // all the smaller ones), for telling the view's elements from the gaps.
  NameId layout{};
  std::uint32_t element_bytes = 0;
  bool nested = false;
  std::vector<region::Dim> dims{};
};

// Every target seen, by index (AccessKey::target), numbered per kind.
class Targets {
 public:
  std::uint32_t add(Target t) {
    t.n = ++count_[t.kind];
    all_.push_back(std::move(t));
    return static_cast<std::uint32_t>(all_.size() - 1);
  }
  const Target& operator[](std::uint32_t t) const { return all_[t]; }

  // The narrowest of `views` (the launching operators') that is a view of
  // `tensor` holding `address` (an element of it, not a gap between its
  // rows); else the tensor.
  std::uint32_t view_at(std::uint32_t tensor, std::uint64_t address,
                        std::span<const std::uint32_t> views) const {
    std::uint32_t best = tensor;
    for (const std::uint32_t i : views) {
      const Target& v = all_[i];
      if (v.parent == tensor && holds(v, address) && (best == tensor || v.bytes < all_[best].bytes))
        best = i;
    }
    return best;
  }
  // The device's test (region::holds), so that counts made there resolve
  // here as the raw accesses they stand for.
  static bool holds(const Target& v, std::uint64_t address) {
    if (address < v.base || address - v.base >= v.bytes) return false;
    if (!v.nested) return true;
    return region::holds(
        {v.base, v.bytes, v.element_bytes, 0, static_cast<std::uint32_t>(v.dims.size()), 0},
        v.dims.data(), address);
  }

  // A node of the forest: the target itself, without its parents.
  std::string node_label(std::uint32_t t) const {
    if (t == no_target) return "(no allocation: shared, local or unknown memory)";
    const Target& x = all_[t];
    switch (x.kind) {
      case Target::tensor:
        return x.source ? fmt::format("tensor #{} ({} B, {} at {})", x.n, x.bytes,
                                      pasta::detail::LiveOps::label(x.op), name_of(x.source))
                        : fmt::format("tensor #{} ({} B, {})", x.n, x.bytes,
                                      pasta::detail::LiveOps::label(x.op));
      case Target::view:
        return fmt::format("view {} at +{} B", name_of(x.layout), x.base - all_[x.parent].base);
      default:
        return fmt::format("allocation #{} ({} B at 0x{:x})", x.n, x.bytes, x.base);
    }
  }
  // A row of the tables: a view names its tensor.
  std::string label(std::uint32_t t) const {
    if (t != no_target && all_[t].kind == Target::view)
      return node_label(all_[t].parent) + " / " + node_label(t);
    return node_label(t);
  }

 private:
  std::vector<Target> all_;
  std::array<std::uint64_t, 3> count_{};  // per Target::Kind
};

}  // namespace pasta::detail::stall
