// The SASS reader on nvdisasm -hex output of the stall-blame example's
// kernel (tests/data/sass/blend.sm90.txt): registers, scoreboards, and the
// loads a stalled instruction waits for.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <pasta/core/detail/files.hpp>
#include <pasta/nv/sampling/sass.hpp>

namespace sass = pasta::nv::detail::sass;

namespace {

std::vector<sass::Instruction> blend() {
  const std::string text =
      pasta::detail::read_file(std::string(PASTA_TEST_DATA_DIR) + "/sass/blend.sm90.txt");
  REQUIRE(!text.empty());
  return sass::parse(text);
}

const sass::Instruction& at(const std::vector<sass::Instruction>& code, std::uint64_t pc) {
  for (const auto& i : code)
    if (i.pc == pc) return i;
  FAIL("no instruction at " << pc);
  return code.front();
}

}  // namespace

TEST_CASE("sass: instructions, registers and scoreboards of nvdisasm -hex output") {
  const auto code = blend();
  REQUIRE(code.size() == 80);  // 0x000 .. 0x4f0
  CHECK(code.front().pc == 0);
  CHECK(code.back().pc == 0x4f0);
  const auto& ldg = at(code, 0x220);  // LDG.E R23, desc[UR4][R18.64]
  CHECK(ldg.opcode == "LDG.E");
  CHECK(ldg.written == std::vector<unsigned>{23});
  CHECK(ldg.registers == std::vector<unsigned>{23, 18, 19});
  CHECK(ldg.write_barrier == 3);
  CHECK(ldg.wait_mask == 0);
  const auto& fadd = at(code, 0x370);  // FADD R23, R23, R14 waiting on scoreboard 3
  CHECK(fadd.wait_mask == 0b001000);
  CHECK(fadd.write_barrier == sass::no_barrier);
  CHECK(at(code, 0x3e0).opcode == "BRA");  // "@P0 BRA 0x130": the guard is not the opcode
  CHECK(at(code, 0x420).written.empty());  // a store writes no register
  CHECK(sass::is_long_load("LDG.E.64"));
  CHECK_FALSE(sass::is_long_load("LDS.U8"));
}

TEST_CASE("sass: the loads a stalled instruction waits for") {
  const auto code = blend();
  // cold[] loads are at 0x220, 0x270, 0x2e0, 0x310; warm[] at 0x1b0, 0x2a0, 0x2c0, 0x300.
  CHECK(sass::producers(code, 0x370).all == std::vector<std::uint64_t>{0x220});
  CHECK(sass::producers(code, 0x370).reads == std::vector<std::uint64_t>{0x220});
  CHECK(sass::producers(code, 0x380).all == std::vector<std::uint64_t>{0x270});
  CHECK(sass::producers(code, 0x360).all == std::vector<std::uint64_t>{0x1b0});
  // Five loads set scoreboard 5; the FFMA waits for all of them and reads one.
  const auto shared = sass::producers(code, 0x390);
  CHECK(shared.all == std::vector<std::uint64_t>{0x2a0, 0x2c0, 0x2e0, 0x300, 0x310});
  CHECK(shared.reads == std::vector<std::uint64_t>{0x2a0});
  CHECK(sass::producers(code, 0x3a0).all.empty());  // waits on nothing
  CHECK(sass::producers(code, 0x170).all.empty());  // waits on a constant load, not L1TEX
  CHECK(sass::producers(code, 0x375).all.empty());  // not an instruction
}

TEST_CASE("sass: text that is not nvdisasm output gives no instructions") {
  CHECK(sass::parse("").empty());
  CHECK(sass::parse("garbage\n/*zz*/ FADD R1, R2 ;\n/*0010*/ no semicolon\n").empty());
  CHECK(sass::parse("/*0010*/ FADD R1, R2, R3 ;\n/* 0xnothex */\n").size() == 1);
}
