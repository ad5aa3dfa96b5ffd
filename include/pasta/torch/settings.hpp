// What torch::Aten can be told, in code (ConfigFor<torch::Aten>'s fields) or by
// a PASTA_* variable. No PyTorch here: pasta/variables.hpp includes it.
#pragma once

#include <string>

#include <pasta/core/detail/variables.hpp>

namespace pasta::torch {

struct AtenSettings {
  bool op_inputs = false;  // PASTA_OP_INPUTS: operators carry input shapes, dtypes
  // PASTA_COMPILED_KERNELS: a torch.compile'd model's Triton kernels are
  // charged to the aten operators they fuse (detail/inductor_bridge.hpp).
  bool compiled_kernels = true;
  // PASTA_MODULES: operators carry the nn.Module they ran in, and module calls
  // are events (detail/module_tracker.hpp; Python 3.12+).
  bool modules = true;
  // PASTA_SOURCE_LINES: operators carry the line of the program that called them.
  bool source_lines = true;
  // PASTA_SOURCE_SKIP: comma-separated path fragments whose frames are not the
  // program's, besides torch's and the standard library's (e.g. "site-packages").
  std::string source_skip;
};

namespace detail::aten_rows {
inline constexpr pasta::detail::Variable<AtenSettings> aten_variables[] = {
    pasta::detail::var::flag<&AtenSettings::op_inputs>("PASTA_OP_INPUTS"),
    pasta::detail::var::flag<&AtenSettings::compiled_kernels>("PASTA_COMPILED_KERNELS"),
    pasta::detail::var::flag<&AtenSettings::modules>("PASTA_MODULES"),
    pasta::detail::var::flag<&AtenSettings::source_lines>("PASTA_SOURCE_LINES"),
    pasta::detail::var::text<&AtenSettings::source_skip>(
        "PASTA_SOURCE_SKIP", "comma-separated path fragments, e.g. site-packages"),
};
inline const bool entered = pasta::detail::enter_known_variables(aten_variables);
}  // namespace detail::aten_rows

using detail::aten_rows::aten_variables;
constexpr const auto& variables_of(const AtenSettings*) { return aten_variables; }

}  // namespace pasta::torch
