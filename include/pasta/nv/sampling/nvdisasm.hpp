// tools::StallBlame's default disassembler: kernels' machine code found in
// a CUDA module's cubin, disassembled by nvdisasm and read as SASS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/config.hpp>
#include <pasta/nv/detail/cubin.hpp>
#include <pasta/nv/sampling/sass.hpp>

namespace pasta::nv::detail {

class Nvdisasm {
 public:
  using Instruction = sass::Instruction;  // pc, opcode, ...
  using Waits = sass::Producers;          // all, reads: the loads a stall waits for

  // The note when no disassembler is found.
  static constexpr std::string_view not_found =
      "nvdisasm was not found (set PASTA_NVDISASM or put the CUDA toolkit's bin on PATH)";

  explicit Nvdisasm(const Config& cfg) : configured_(cfg.nvdisasm) {}

  // f(kernel, arch, code) for each kernel's code in a module image.
  template <class F>
  static void for_each_kernel(std::span<const std::byte> image, F&& f) {
    const unsigned arch = sm_of(image);
    for_each_kernel_code(image, [&](std::string_view kernel, std::span<const std::byte> code) {
      f(kernel, arch, code);
    });
  }

  // The disassembler's path (PASTA_NVDISASM, else PATH, $CUDA_HOME/bin,
  // /usr/local/cuda/bin); empty when there is none.
  std::string locate() const { return sass::find_nvdisasm(configured_); }

  // One kernel's instructions, sorted by pc; none on failure, and `error` says why.
  static std::vector<Instruction> disassemble(std::span<const std::byte> code, unsigned arch,
                                              const std::string& tool, std::string& error) {
    return sass::disassemble(code, arch, tool, error);
  }

  // The instruction at `pc`; null if none.
  static const Instruction* at(const std::vector<Instruction>& code, std::uint64_t pc) {
    return sass::find(code, pc);
  }

  // The loads in `code` that the access run cannot see, and what they are.
  static constexpr std::string_view unseen_loads_are = "TMA tensor copies (UTMALDG)";
  static std::size_t unseen_loads(const std::vector<Instruction>& code) {
    std::size_t n = 0;
    for (const Instruction& i : code) n += sass::is_unpatched_load(i.opcode);
    return n;
  }

  // The loads a warp stalled at `pc` on a memory dependency waits for.
  static Waits waits_for(const std::vector<Instruction>& code, std::uint64_t pc) {
    return sass::producers(code, pc);
  }

 private:
  std::string configured_;
};

}  // namespace pasta::nv::detail
