// The kernel (entry function) names of a cubin, read from its ELF symbol
// table: nv::Sanitizer asks, as a module loads, whether any of its kernels
// passes the kernel filter, and leaves the module unpatched if none does.
#pragma once

#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace pasta::nv::detail {

// st_other bit that marks a CUDA entry function (a __global__ kernel).
inline constexpr unsigned char sto_cuda_entry = 0x10;

// Calls f(std::string_view mangled_name) for each kernel. Returns false (having
// called f for none or some) if the image is not a 64-bit ELF or is cut short.
template <class F>
bool for_each_kernel(std::span<const std::byte> image, F&& f) {
  const auto* base = reinterpret_cast<const unsigned char*>(image.data());
  const std::size_t size = image.size();
  auto fits = [&](std::uint64_t offset, std::uint64_t bytes) {
    return offset <= size && bytes <= size - offset;
  };
  Elf64_Ehdr eh;
  if (!fits(0, sizeof eh)) return false;
  std::memcpy(&eh, base, sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !fits(eh.e_shoff, std::uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr)))
    return false;
  auto section = [&](std::size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, base + eh.e_shoff + i * sizeof sh, sizeof sh);
    return sh;
  };
  for (std::size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr symtab = section(i);
    if (symtab.sh_type != SHT_SYMTAB) continue;
    if (symtab.sh_link >= eh.e_shnum || symtab.sh_entsize != sizeof(Elf64_Sym) ||
        !fits(symtab.sh_offset, symtab.sh_size))
      return false;
    const Elf64_Shdr strtab = section(symtab.sh_link);
    if (!fits(strtab.sh_offset, strtab.sh_size)) return false;
    const std::string_view names(reinterpret_cast<const char*>(base + strtab.sh_offset),
                                 strtab.sh_size);
    for (std::uint64_t s = 0; s < symtab.sh_size / sizeof(Elf64_Sym); ++s) {
      Elf64_Sym sym;
      std::memcpy(&sym, base + symtab.sh_offset + s * sizeof sym, sizeof sym);
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || !(sym.st_other & sto_cuda_entry)) continue;
      if (sym.st_name >= names.size()) return false;
      const std::string_view rest = names.substr(sym.st_name);
      const std::size_t end = rest.find('\0');
      if (end == std::string_view::npos) return false;
      f(rest.substr(0, end));
    }
    return true;
  }
  return false;  // no symbol table
}

}  // namespace pasta::nv::detail
