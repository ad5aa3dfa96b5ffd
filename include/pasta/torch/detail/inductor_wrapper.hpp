// What Inductor writes about its Triton kernels in a compiled graph's module
// (the wrapper code TORCH_LOGS=output_code prints), read back: each kernel's
// name, its source file (whose stem is the source hash) and the operators
// its comment says it fuses; and each place the graph launches a kernel, with
// the two lines torch::Aten adds to the comment before it when it watched the
// compile (detail/inductor_bridge.hpp): the nn.Module of the FX nodes that
// launch computes and the frames of the code that made them. One kernel can
// be launched from several places (Inductor defines identical code once: the
// same kernel for every block of a model). No PyTorch and no Python here.
//
//   # kernel path: /tmp/torchinductor_u/ab/cabxyz.py
//   # Topologically Sorted Source Nodes: [x, y], Original ATen: [aten.add, aten.relu]
//   ...
//   triton_poi_fused_add_relu_0 = async_compile.triton('triton_poi_fused_add_relu_0', '''
//   ...
//   def call(args):
//       ...
//       # Topologically Sorted Source Nodes: [x, y], Original ATen: [aten.add, aten.relu]
//   # pasta module: root= path=h.0.mlp class=MLP
//   # pasta frames: /m/model.py:41;/m/model.py:88
//       triton_poi_fused_add_relu_0.run(buf0, buf1, 1024, stream=stream0)
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

// One launch of a kernel in the graph's code, and what the comment before it
// says of the FX nodes it computes.
struct InductorCallSite {
  int line = 0;        // of the `.run(` call (or the extern call), from 1
  std::string kernel;  // the kernel it launches, or the extern callee ("extern_kernels.mm")
  bool external = false;  // a call of an extern kernel or an aten fallback, not a Triton launch
  // The nodes' common module, as their nn_module_stack names it. `root`: the
  // class of a module the compiled code was handed (a function compiled with
  // a model as an argument), empty when it is the compiled frame's own `self`
  // (then `path` is below the module running the graph); `path`: the
  // attributes from there ("h.0.mlp"; empty: that module itself).
  bool has_module = false;
  std::string module_root, module_path, module_class;
  std::vector<std::string> frames;  // "file:line" of the code that made them, innermost first
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

// "root=M path=h.0.mlp class=MLP" (after "# pasta module: ") into `k`.
inline void read_module_line(std::string_view text, InductorCallSite& k) {
  k.has_module = true;
  while (!text.empty()) {
    const auto space = text.find(' ');
    const std::string_view field = text.substr(0, space);
    text.remove_prefix(space == std::string_view::npos ? text.size() : space + 1);
    const auto eq = field.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    if (key == "root") k.module_root = value;
    if (key == "path") k.module_path = value;
    if (key == "class") k.module_class = value;
  }
}

// "/m/a.py:41;/m/a.py:88" (after "# pasta frames: ").
inline std::vector<std::string> read_frames(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto semi = text.find(';');
    if (semi != 0) out.emplace_back(text.substr(0, semi));
    if (semi == std::string_view::npos) break;
    text.remove_prefix(semi + 1);
  }
  return out;
}

// Calls fn(line, number) (number from 1, no line end) for each line of the
// module outside the kernels' ''' sources; fn returns whether a kernel's
// source starts after that line (its definition's line ends with ''').
template <class Fn>
void for_each_wrapper_line(std::string_view module, Fn fn) {
  bool in_source = false;
  for (int number = 1; !module.empty(); ++number) {
    const auto nl = module.find('\n');
    std::string_view line = module.substr(0, nl);
    module.remove_prefix(nl == std::string_view::npos ? module.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    in_source = in_source ? !line.starts_with("'''") : fn(line, number);
  }
}

// Every Triton kernel the module defines, in its order. A kernel's comment
// block (path, then its operators) comes right before its definition; a
// definition without one is listed with no path and no operators.
inline std::vector<InductorKernel> inductor_kernels(std::string_view module) {
  std::vector<InductorKernel> out;
  InductorKernel pending;
  for_each_wrapper_line(module, [&](std::string_view line, int) {
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
      return line.ends_with("'''");
    } else if (!line.empty() && !line.starts_with("#")) {
      pending = {};  // a comment block belongs to the definition right after it
    }
    return false;
  });
  return out;
}

// The callee of an extern kernel's call ("extern_kernels.mm" of
// "extern_kernels.mm(buf0, ..., out=buf1)", "torch.ops.aten.x.default" of
// "buf5 = torch.ops.aten.x.default(buf2)"): a call Inductor writes for work
// it does not generate (cuBLAS GEMMs, convolutions, attention, fallback aten
// operators). Empty for any other line.
inline std::string_view extern_callee(std::string_view line) {
  if (const auto eq = line.find(" = "); eq != std::string_view::npos &&
                                         line.substr(0, eq).find_first_of("(#") == std::string_view::npos)
    line.remove_prefix(eq + 3);
  const auto paren = line.find('(');
  if (paren == std::string_view::npos) return {};
  const std::string_view callee = line.substr(0, paren);
  for (std::string_view prefix : {"extern_kernels.", "torch.ops.", "aten."})
    if (callee.starts_with(prefix) && callee.find_first_of(" =") == std::string_view::npos)
      return callee;
  return {};
}

// Every `KERNEL.run(` launch in the module, in its order, with the module
// lines of the comment that comes before it: each launch's comment starts
// with Inductor's "Source Nodes" line, and torch::Aten's lines follow it.
// An extern kernel's call with such lines right before it is a site too
// (`external`): its comment is written the same way.
inline std::vector<InductorCallSite> inductor_call_sites(std::string_view module) {
  std::vector<InductorCallSite> out;
  InductorCallSite pending;
  for_each_wrapper_line(module, [&](std::string_view line, int number) {
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    constexpr std::string_view module_key = "# pasta module: ", frames_key = "# pasta frames: ";
    if (line.find(" = async_compile.triton(") != std::string_view::npos) {
      pending = {};
      return line.ends_with("'''");
    } else if (line.starts_with("#") && line.find("Source Nodes: [") != std::string_view::npos) {
      pending = {};  // a launch's comment begins
    } else if (line.starts_with(module_key)) {
      read_module_line(line.substr(module_key.size()), pending);
    } else if (line.starts_with(frames_key)) {
      pending.frames = read_frames(line.substr(frames_key.size()));
    } else if (const auto run = line.find(".run("); run != std::string_view::npos && run > 0 &&
               line.substr(0, run).find_first_of(" =(#") == std::string_view::npos) {
      pending.line = number;
      pending.kernel = std::string(line.substr(0, run));
      out.push_back(std::move(pending));
      pending = {};
    } else if (const std::string_view callee = extern_callee(line);
               !callee.empty() && pending.has_module) {
      pending.line = number;
      pending.kernel = std::string(callee);
      pending.external = true;
      out.push_back(std::move(pending));
      pending = {};
    }
    return false;
  });
  return out;
}

// A graph module's kernels and launches, as the two readers above give them.
struct InductorGraph {
  std::vector<InductorKernel> kernels;
  std::vector<InductorCallSite> sites;
};
inline InductorGraph inductor_graph(std::string_view module) {
  return {inductor_kernels(module), inductor_call_sites(module)};
}

// One launch of kernel `name` (source hash `source`) from line `line` of the
// graph's code: its definition, keyed on the source hash or, failing that,
// on the name (unique within a module: Inductor numbers its kernels); and
// the last `name.run(` at or above that line (a call written over several
// lines reports one of them). nullptr where there is none.
struct InductorLaunch {
  const InductorKernel* kernel = nullptr;
  bool by_name = false;
  const InductorCallSite* site = nullptr;
};
inline InductorLaunch find_launch(const InductorGraph& graph, std::string_view name,
                                  std::string_view source, int line) {
  InductorLaunch out;
  for (const InductorKernel& k : graph.kernels)
    if (!source.empty() && k.source == source) out.kernel = &k;
  if (!out.kernel)
    for (const InductorKernel& k : graph.kernels)
      if (k.name == name) out.kernel = &k, out.by_name = true;
  for (const InductorCallSite& c : graph.sites)
    if (c.line <= line && c.kernel == name) out.site = &c;
  return out;
}

// The extern kernel's call at line `line` of the graph's code, or nullptr.
inline const InductorCallSite* find_extern(const InductorGraph& graph, int line) {
  for (const InductorCallSite& c : graph.sites)
    if (c.external && c.line == line) return &c;
  return nullptr;
}

}  // namespace pasta::torch::detail
