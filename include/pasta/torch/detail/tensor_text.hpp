// What torch::Aten reads of an operator's inputs: their types and shapes as
// text, and each input that is a view of its storage as a TensorView.
#pragma once

#include <ATen/record_function.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/names.hpp>

namespace pasta::torch::detail {

// "float[3, 224, 224]": a tensor's element type and sizes.
inline void append_shape(std::string& out, const at::Tensor& t) {
  out += c10::toString(t.scalar_type());
  out += '[';
  for (std::size_t d = 0; d < t.sizes().size(); ++d)
    out += fmt::format("{}{}", d ? ", " : "", t.sizes()[d]);
  out += ']';
}

// "float[32, 3, 224, 224], float[64], 1" for an operator's inputs.
inline std::string inputs_text(const at::RecordFunction& fn) {
  std::string out;
  for (const c10::IValue& v : fn.inputs()) {
    if (!out.empty()) out += ", ";
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (t.defined())
        append_shape(out, t);
      else
        out += "undefined";
    } else if (v.isScalar()) {
      out += v.isDouble() ? fmt::format("{}", v.toDouble()) : fmt::format("{}", v.toInt());
    } else if (v.isTensorList()) {
      out += fmt::format("list of {} tensors", v.toTensorList().size());
    } else if (v.isNone()) {
      out += "None";
    } else {
      out += v.tagKind();
    }
  }
  return out;
}

// `t` as a view of its storage (a slice, a transpose, a split, an expand),
// with op and thread left for the caller; nothing for a tensor that is its
// whole storage in order (its base), that is empty, or has no storage to read.
inline std::optional<TensorView> view_of(const at::Tensor& t) {
  if (!t.defined() || !t.has_storage() || t.numel() == 0) return std::nullopt;
  const c10::Storage& storage = t.storage();
  const auto base = reinterpret_cast<std::uint64_t>(storage.data());
  const auto address = reinterpret_cast<std::uint64_t>(t.data_ptr());
  if (!base || !address) return std::nullopt;
  const auto element = static_cast<std::uint64_t>(t.element_size());
  std::uint64_t last = 0;  // elements from the first to the last
  for (std::size_t d = 0; d < t.sizes().size(); ++d)
    last += static_cast<std::uint64_t>(t.sizes()[d] - 1) *
            static_cast<std::uint64_t>(std::abs(t.strides()[d]));
  const std::uint64_t bytes = (last + 1) * element;
  if (!t.is_view() && address == base && bytes == storage.nbytes() && t.is_contiguous())
    return std::nullopt;
  std::string layout;
  append_shape(layout, t);
  layout += " strides [";
  for (std::size_t d = 0; d < t.strides().size(); ++d)
    layout += fmt::format("{}{}", d ? ", " : "", t.strides()[d]);
  layout += ']';
  const c10::Device device = t.device();
  return TensorView{.address = address,
                    .bytes = bytes,
                    .base = base,
                    .base_bytes = storage.nbytes(),
                    .layout = intern(layout),
                    .element_bytes = static_cast<std::uint32_t>(element),
                    .device = device.is_cpu() ? pasta::host_device
                                              : static_cast<std::uint32_t>(device.index())};
}

}  // namespace pasta::torch::detail
