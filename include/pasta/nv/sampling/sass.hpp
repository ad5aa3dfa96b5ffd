// A kernel's SASS, as nvdisasm prints it, read far enough to answer one
// question: which loads does a warp stalled on a scoreboard at this
// instruction wait for? tools::StallBlame (through nv::detail::Nvdisasm)
// moves memory-dependency stalls there, so they land on the tensor the load
// read.
//
// Each instruction of sm_70 and later carries its scheduling controls in
// bits 105-125 of its 128-bit encoding (printed by `nvdisasm -hex` as the
// second word): the scoreboard it sets when its result is written (3 bits,
// 7 = none) and the scoreboards it waits on before it issues (a 6-bit mask).
// A load that sets scoreboard b and an instruction that waits on b are the
// two ends of a dependency. A scoreboard counts outstanding results, so an
// instruction waiting on it waits for every load that set it, not only the
// one whose register it reads.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

namespace pasta::nv::detail::sass {

inline constexpr std::uint8_t no_barrier = 7;

struct Instruction {
  std::uint64_t pc = 0;
  std::string opcode;               // with modifiers, e.g. "LDG.E.64"
  std::vector<unsigned> registers;  // every R register it names (pairs expanded)
  std::vector<unsigned> written;    // the registers its first operand writes
  std::uint8_t write_barrier = no_barrier;
  std::uint8_t wait_mask = 0;
};

// The opcode without modifiers: "LDG" for "LDG.E.64".
inline std::string_view base_opcode(std::string_view opcode) {
  return opcode.substr(0, opcode.find('.'));
}

// Loads from global memory that no Compute Sanitizer patch sees: the tensor
// memory accelerator's copies (cp.async.bulk.tensor, UTMALDG), for which CUDA
// 13.0's Sanitizer API names no instruction to patch.
inline bool is_unpatched_load(std::string_view opcode) { return base_opcode(opcode) == "UTMALDG"; }

// Instructions whose results come back through the L1TEX path, so that a
// warp needing them stalls on "long scoreboard": global, local and generic
// loads, atomics that return a value, texture and surface reads.
inline bool is_long_load(std::string_view opcode) {
  static constexpr std::array<std::string_view, 11> ops = {
      "LDG", "LD", "LDL", "ATOMG", "ATOM", "TLD", "TEX", "TLD4", "TXD", "SULD", "SUATOM"};
  const auto base = base_opcode(opcode);
  return std::find(ops.begin(), ops.end(), base) != ops.end();
}

namespace detail {

inline bool writes_first_operand(std::string_view opcode) {
  static constexpr std::array<std::string_view, 16> no_dest = {
      "ST",  "STG", "STL",  "STS", "RED",   "BRA",      "BRX",    "EXIT",
      "BAR", "RET", "CALL", "JMP", "SYNCS", "WARPSYNC", "MEMBAR", "NOP"};
  const auto base = base_opcode(opcode);
  return std::find(no_dest.begin(), no_dest.end(), base) == no_dest.end();
}

inline unsigned load_width(std::string_view opcode) {
  if (opcode.find(".128") != std::string_view::npos) return 4;
  if (opcode.find(".64") != std::string_view::npos) return 2;
  return 1;
}

inline bool wide(std::string_view opcode) {
  return opcode.find(".WIDE") != std::string_view::npos ||
         opcode.find(".64") != std::string_view::npos;
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Hex digits (no prefix, at most 16) -> the number; false if any is not one.
inline bool hex_digits(std::string_view s, std::uint64_t& value) {
  if (s.empty() || s.size() > 16) return false;
  value = 0;
  for (char c : s) {
    unsigned d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return false;
    value = value << 4 | d;
  }
  return true;
}

// "/* 0x000fe20000000800 */" -> the number; false if the text is not that.
inline bool hex_comment(std::string_view s, std::uint64_t& value) {
  s = trim(s);
  if (!s.starts_with("/*") || !s.ends_with("*/")) return false;
  s = trim(s.substr(2, s.size() - 4));
  return s.starts_with("0x") && hex_digits(s.substr(2), value);
}

// Register numbers named in operand text: R12 -> {12}; R12.64 -> {12, 13};
// RZ (the zero register) names none.
inline void registers_in(std::string_view text, bool pairs, std::vector<unsigned>& out) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != 'R' ||
        (i > 0 && (std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_')))
      continue;
    std::size_t j = i + 1;
    unsigned n = 0;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') n = n * 10 + (text[j++] - '0');
    if (j == i + 1) continue;
    unsigned width = pairs ? 2 : 1;
    if (text.substr(j).starts_with(".64")) width = 2;
    if (text.substr(j).starts_with(".128")) width = 4;
    for (unsigned k = 0; k < width; ++k) out.push_back(n + k);
    i = j - 1;
  }
}

}  // namespace detail

// Reads `nvdisasm -hex` output: each instruction line is
//   /*00c0*/   [@P0] OPCODE operands ;   /* 0x<low word> */
// followed by a line holding /* 0x<high word> */.
inline std::vector<Instruction> parse(std::string_view text) {
  std::vector<Instruction> code;
  bool want_high = false;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    const std::string_view t = detail::trim(line);
    std::uint64_t high = 0;
    if (want_high && detail::hex_comment(t, high)) {
      const unsigned control = static_cast<unsigned>(high >> 41);
      code.back().write_barrier = static_cast<std::uint8_t>((control >> 5) & 7);
      code.back().wait_mask = static_cast<std::uint8_t>((control >> 11) & 63);
      want_high = false;
      continue;
    }
    want_high = false;
    if (!t.starts_with("/*")) continue;
    const auto close = t.find("*/");
    if (close == std::string_view::npos) continue;
    Instruction ins;
    if (!detail::hex_digits(t.substr(2, close - 2), ins.pc)) continue;
    std::string_view body = t.substr(close + 2);
    const auto semi = body.find(';');
    if (semi == std::string_view::npos) continue;
    body = detail::trim(body.substr(0, semi));
    if (body.starts_with('@')) {  // predicate guard
      const auto space = body.find(' ');
      if (space == std::string_view::npos) continue;
      body = detail::trim(body.substr(space));
    }
    const auto space = body.find(' ');
    ins.opcode = std::string(body.substr(0, space));
    const std::string_view operands =
        space == std::string_view::npos ? std::string_view() : body.substr(space + 1);
    detail::registers_in(operands, detail::wide(ins.opcode), ins.registers);
    if (detail::writes_first_operand(ins.opcode)) {
      const std::string_view first = operands.substr(0, operands.find(','));
      std::vector<unsigned> regs;
      detail::registers_in(first, false, regs);
      if (!regs.empty()) {
        const unsigned width = is_long_load(ins.opcode) ? detail::load_width(ins.opcode)
                                                        : static_cast<unsigned>(regs.size());
        for (unsigned k = 0; k < width; ++k) ins.written.push_back(regs.front() + k);
      }
    }
    code.push_back(std::move(ins));
    want_high = true;
  }
  return code;
}

// The instruction at `pc` of a parsed function (sorted by pc); null if none.
inline const Instruction* find(const std::vector<Instruction>& code, std::uint64_t pc) {
  const auto at = std::lower_bound(code.begin(), code.end(), pc,
                                   [](const Instruction& i, std::uint64_t p) { return i.pc < p; });
  return at == code.end() || at->pc != pc ? nullptr : &*at;
}

// The loads a warp stalled at the instruction at `pc` waits for: loads that
// set a scoreboard it waits on, searching back from it (around the
// function, for loops) up to the last instruction that already waited on
// that scoreboard. A scoreboard counts: waiting on it waits for every load
// that set it, so `all` holds them all; `reads` those whose destination
// registers the instruction names. Both empty when it waits on no load.
struct Producers {
  std::vector<std::uint64_t> all, reads;
};

inline Producers producers(const std::vector<Instruction>& code, std::uint64_t pc) {
  Producers out;
  const Instruction* at = find(code, pc);
  if (!at || at->wait_mask == 0) return out;
  const std::size_t n = code.size(), self = static_cast<std::size_t>(at - code.data());
  unsigned open = at->wait_mask;
  for (std::size_t step = 1; step < n && open; ++step) {
    const Instruction& q = code[(self + n - step) % n];
    if (q.write_barrier != no_barrier && (open >> q.write_barrier & 1u) && is_long_load(q.opcode)) {
      out.all.push_back(q.pc);
      for (unsigned r : q.written)
        if (std::find(at->registers.begin(), at->registers.end(), r) != at->registers.end()) {
          out.reads.push_back(q.pc);
          break;
        }
    }
    open &= ~static_cast<unsigned>(q.wait_mask);  // earlier results were already waited for
  }
  std::sort(out.all.begin(), out.all.end());
  std::sort(out.reads.begin(), out.reads.end());
  return out;
}

// nvdisasm: PASTA_NVDISASM if set, else on PATH, in $CUDA_HOME/bin or in
// /usr/local/cuda/bin. Empty when none is found.
inline std::string find_nvdisasm(const std::string& configured) {
  if (!configured.empty()) return ::access(configured.c_str(), X_OK) == 0 ? configured : "";
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest(path);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      if (colon) dirs.emplace_back(rest.substr(0, colon));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var)) dirs.push_back(std::string(v) + "/bin");
  dirs.emplace_back("/usr/local/cuda/bin");
  for (const auto& d : dirs) {
    const std::string candidate = d + "/nvdisasm";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// Disassembles one function's machine code for sm_<sm> with nvdisasm.
// Returns the instructions; on failure none, and `error` says why.
inline std::vector<Instruction> disassemble(std::span<const std::byte> code, unsigned sm,
                                            const std::string& nvdisasm, std::string& error) {
  char path[] = "/tmp/pasta-sass-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) {
    error = "cannot create a temporary file for nvdisasm";
    return {};
  }
  bool written = ::write(fd, code.data(), code.size()) == static_cast<ssize_t>(code.size());
  ::close(fd);
  std::string text;
  int status = -1;
  if (written) {
    const std::string command =
        fmt::format("'{}' -hex -b SM{} '{}' 2>&1", nvdisasm, sm, std::string(path));
    if (FILE* p = ::popen(command.c_str(), "r")) {
      char buffer[1 << 14];
      std::size_t got;
      while ((got = std::fread(buffer, 1, sizeof buffer, p)) > 0) text.append(buffer, got);
      status = ::pclose(p);
    }
  }
  ::unlink(path);
  if (!written || status != 0) {
    error = written ? fmt::format("{} -b SM{} failed: {}", nvdisasm, sm,
                                  text.substr(0, text.find('\n')))
                    : "cannot write a temporary file for nvdisasm";
    return {};
  }
  auto parsed = parse(text);
  if (parsed.empty()) error = fmt::format("{} printed no instructions for SM{}", nvdisasm, sm);
  return parsed;
}

}  // namespace pasta::nv::detail::sass
