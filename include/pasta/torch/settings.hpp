// What torch::Aten can be told, in code (a field Config inherits) or by a
// PASTA_* variable. No PyTorch here: core/config.hpp includes it.
#pragma once

#include <pasta/core/detail/variables.hpp>

namespace pasta::torch {

struct AtenSettings {
  bool op_inputs = false;  // PASTA_OP_INPUTS: operators carry input shapes, dtypes
  // PASTA_COMPILED_KERNELS: a torch.compile'd model's Triton kernels are
  // charged to the aten operators they fuse (detail/inductor_bridge.hpp).
  bool compiled_kernels = true;
};

inline constexpr pasta::detail::Variable<AtenSettings> aten_variables[] = {
    pasta::detail::var::flag<&AtenSettings::op_inputs>("PASTA_OP_INPUTS"),
    pasta::detail::var::flag<&AtenSettings::compiled_kernels>("PASTA_COMPILED_KERNELS"),
};

}  // namespace pasta::torch
