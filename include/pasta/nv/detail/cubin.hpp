// The kernels (entry functions) and `__device__` variables of a cubin, read
// from its ELF symbol table: nv::Sanitizer asks, as a module loads, whether
// any of its kernels passes the kernel filter, and leaves the module
// unpatched if none does; tools::StallBlame keeps each kernel's machine code
// to disassemble; counters' user replay saves the variables a replayed
// kernel may write (nv/counters/module_variables.hpp).
#pragma once

#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>

namespace pasta::nv::detail {

// st_other bit that marks a CUDA entry function (a __global__ kernel).
inline constexpr unsigned char sto_cuda_entry = 0x10;

// Calls f(const Elf64_Sym& symbol, std::string_view name, const Elf64_Shdr*
// section, std::string_view section_name) for each symbol of the image's
// symbol table (section null, and its name empty, where the symbol's section
// index names none). Returns false (having called f for none or some) if the
// image is not a 64-bit ELF or is cut short.
// Whether `bytes` bytes from `offset` lie inside an image of `size` bytes
// (no overflow whatever the ELF headers claim).
inline bool in_image(std::size_t size, std::uint64_t offset, std::uint64_t bytes) {
  return offset <= size && bytes <= size - offset;
}

template <class F>
bool for_each_symbol(std::span<const std::byte> image, F&& f) {
  const auto* base = reinterpret_cast<const unsigned char*>(image.data());
  auto fits = [size = image.size()](std::uint64_t offset, std::uint64_t bytes) {
    return in_image(size, offset, bytes);
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
  // A NUL-terminated name at `at` of a string table, or nothing.
  auto name_in = [&](std::string_view table, std::uint64_t at) -> std::optional<std::string_view> {
    if (at >= table.size()) return std::nullopt;
    const std::string_view rest = table.substr(at);
    const std::size_t end = rest.find('\0');
    if (end == std::string_view::npos) return std::nullopt;
    return rest.substr(0, end);
  };
  std::string_view section_names;  // .shstrtab, where the image has one
  if (eh.e_shstrndx < eh.e_shnum) {
    const Elf64_Shdr shstrtab = section(eh.e_shstrndx);
    if (!fits(shstrtab.sh_offset, shstrtab.sh_size)) return false;
    section_names = {reinterpret_cast<const char*>(base + shstrtab.sh_offset), shstrtab.sh_size};
  }
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
    for (std::uint64_t n = 0; n < symtab.sh_size / sizeof(Elf64_Sym); ++n) {
      Elf64_Sym sym;
      std::memcpy(&sym, base + symtab.sh_offset + n * sizeof sym, sizeof sym);
      const auto name = name_in(names, sym.st_name);
      if (!name) return false;
      if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= eh.e_shnum) {
        f(sym, *name, static_cast<const Elf64_Shdr*>(nullptr), std::string_view{});
        continue;
      }
      const Elf64_Shdr in = section(sym.st_shndx);
      f(sym, *name, &in, name_in(section_names, in.sh_name).value_or(std::string_view{}));
    }
    return true;
  }
  return false;  // no symbol table
}

// Calls f(std::string_view mangled_name, std::span<const std::byte> code) for
// each kernel; code is empty where the image does not hold it. Returns false
// as for_each_symbol does.
template <class F>
bool for_each_kernel_code(std::span<const std::byte> image, F&& f) {
  return for_each_symbol(image, [&](const Elf64_Sym& sym, std::string_view name,
                                    const Elf64_Shdr* text, std::string_view) {
    if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || !(sym.st_other & sto_cuda_entry)) return;
    std::span<const std::byte> code;
    if (text && text->sh_type == SHT_PROGBITS &&
        in_image(text->sh_size, sym.st_value, sym.st_size) &&
        in_image(image.size(), text->sh_offset, sym.st_value) &&
        in_image(image.size(), text->sh_offset + sym.st_value, sym.st_size))
      code = image.subspan(text->sh_offset + sym.st_value, sym.st_size);
    f(name, code);
  });
}

// Calls f(std::string_view name) for each variable in the image's global
// memory that kernels may write (`__device__` variables: .nv.global, and
// .nv.global.init for those with an initial value; not `__constant__`
// ones), by the name cuModuleGetGlobal takes. Returns false as
// for_each_symbol does.
template <class F>
bool for_each_device_variable(std::span<const std::byte> image, F&& f) {
  return for_each_symbol(image, [&](const Elf64_Sym& sym, std::string_view name,
                                    const Elf64_Shdr*, std::string_view section) {
    if (ELF64_ST_TYPE(sym.st_info) == STT_OBJECT && sym.st_size > 0 && !name.empty() &&
        (section == ".nv.global" || section == ".nv.global.init"))
      f(name);
  });
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
