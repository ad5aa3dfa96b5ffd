// The kernels (entry functions) of a cubin, read from its ELF symbol table:
// nv::Sanitizer asks, as a module loads, whether any of its kernels passes
// the kernel filter, and leaves the module unpatched if none does;
// tools::StallBlame keeps each kernel's machine code to disassemble.
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

// Calls f(std::string_view mangled_name, std::span<const std::byte> code) for
// each kernel; code is empty where the image does not hold it. Returns false
// (having called f for none or some) if the image is not a 64-bit ELF or is
// cut short.
template <class F>
bool for_each_kernel_code(std::span<const std::byte> image, F&& f) {
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
      std::span<const std::byte> code;
      if (sym.st_shndx < eh.e_shnum) {
        const Elf64_Shdr text = section(sym.st_shndx);
        if (text.sh_type == SHT_PROGBITS && sym.st_value <= text.sh_size &&
            sym.st_size <= text.sh_size - sym.st_value &&
            fits(text.sh_offset + sym.st_value, sym.st_size))
          code = image.subspan(text.sh_offset + sym.st_value, sym.st_size);
      }
      f(rest.substr(0, end), code);
    }
    return true;
  }
  return false;  // no symbol table
}

template <class F>
bool for_each_kernel(std::span<const std::byte> image, F&& f) {
  return for_each_kernel_code(image,
                              [&](std::string_view name, std::span<const std::byte>) { f(name); });
}

// The SM version a cubin was built for (90 for sm_90), 0 if not a cubin.
// ELF ABI version 8 and later keep it in bits 8-15 of e_flags, earlier ones
// in bits 0-7.
inline unsigned sm_of(std::span<const std::byte> image) {
  Elf64_Ehdr eh;
  if (image.size() < sizeof eh) return 0;
  std::memcpy(&eh, image.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return 0;
  return eh.e_ident[EI_ABIVERSION] >= 8 ? (eh.e_flags >> 8) & 0xffu : eh.e_flags & 0xffu;
}

}  // namespace pasta::nv::detail
