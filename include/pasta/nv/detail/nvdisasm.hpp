// Where tools/stall_blame.hpp includes the disassembler from, while that file
// is edited elsewhere: it is nv/sampling/nvdisasm.hpp.
#pragma once

#include <pasta/nv/sampling/nvdisasm.hpp>
