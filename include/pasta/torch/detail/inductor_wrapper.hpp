// What Inductor writes about its Triton kernels in a compiled graph's module
// (the wrapper code TORCH_LOGS=output_code prints), read back: each kernel's
// name, its source file (whose stem is the source hash) and the operators
// its comment says it fuses. No PyTorch and no Python here.
//
//   # kernel path: /tmp/torchinductor_u/ab/cabxyz.py
//   # Topologically Sorted Source Nodes: [x, y], Original ATen: [aten.add, aten.relu]
//   ...
//   triton_poi_fused_add_relu_0 = async_compile.triton('triton_poi_fused_add_relu_0', '''
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pasta::torch::detail {

struct InductorKernel {
  std::string name;    // "triton_poi_fused_add_relu_0"
  std::string path;    // the kernel's source file
  std::string source;  // its stem: Inductor's hash of the kernel's source
  std::vector<std::string> fused;  // as Inductor lists them: "aten.add", "aten.relu"
};

// "cabxyz" of "/tmp/torchinductor_u/ab/cabxyz.py".
inline std::string_view source_hash(std::string_view path) {
  if (const auto slash = path.rfind('/'); slash != std::string_view::npos)
    path.remove_prefix(slash + 1);
  if (const auto dot = path.find(".py"); dot != std::string_view::npos) path = path.substr(0, dot);
  return path;
}

// "aten.add" as operator events name it, "aten::add": a namespace, then the
// overload packet. Names without a namespace (higher-order operators) stay.
inline std::string operator_event_name(std::string_view inductor_name) {
  const auto dot = inductor_name.find('.');
  if (dot == std::string_view::npos || dot == 0 ||
      inductor_name.find("::") != std::string_view::npos)
    return std::string(inductor_name);
  std::string out(inductor_name.substr(0, dot));
  out += "::";
  out += inductor_name.substr(dot + 1);
  return out;
}

// "aten.add, aten.relu" of "...Original ATen: [aten.add, aten.relu]".
inline std::vector<std::string> original_aten(std::string_view line) {
  std::vector<std::string> out;
  constexpr std::string_view key = "Original ATen: [";
  const auto at = line.find(key);
  const auto end = line.rfind(']');
  if (at == std::string_view::npos || end == std::string_view::npos || end < at + key.size())
    return out;
  std::string_view list = line.substr(at + key.size(), end - at - key.size());
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

// Every Triton kernel the module defines, in its order. A kernel's comment
// block (path, then its operators) comes right before its definition; a
// definition without one is listed with no path and no operators.
inline std::vector<InductorKernel> inductor_kernels(std::string_view module) {
  std::vector<InductorKernel> out;
  InductorKernel pending;
  bool in_source = false;  // inside a kernel's ''' source '''
  while (!module.empty()) {
    const auto nl = module.find('\n');
    std::string_view line = module.substr(0, nl);
    module.remove_prefix(nl == std::string_view::npos ? module.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (in_source) {
      if (line.starts_with("'''")) in_source = false;
      continue;
    }
    constexpr std::string_view path_key = "# kernel path: ";
    constexpr std::string_view define_key = " = async_compile.triton(";
    if (line.starts_with(path_key)) {
      pending = {};
      pending.path = std::string(line.substr(path_key.size()));
      pending.source = std::string(source_hash(pending.path));
    } else if (line.starts_with("#") && line.find("Original ATen: [") != std::string_view::npos) {
      if (!pending.path.empty()) pending.fused = original_aten(line);
    } else if (const auto d = line.find(define_key);
               d != std::string_view::npos && d > 0 && line.front() != ' ' &&
               line.front() != '#') {
      pending.name = std::string(line.substr(0, d));
      out.push_back(std::move(pending));
      pending = {};
      in_source = line.ends_with("'''");
    } else if (!line.empty() && !line.starts_with("#")) {
      pending = {};  // a comment block belongs to the definition right after it
    }
  }
  return out;
}

}  // namespace pasta::torch::detail
