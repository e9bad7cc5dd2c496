#include "npu/xdna/ctrl_elf.h"

#include <gelf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tests/npu/xdna/artifact_builders.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {
namespace {

using test::build_ctrl_elf;
using test::ElfSpec;

TEST(CtrlElf, ParsesAValidControlCodeElf) {
  const auto b = build_ctrl_elf(ElfSpec{});
  const CtrlElf e = parse_ctrl_elf(b, "gemm.elf");
  EXPECT_EQ(e.elf_class, 32);
  EXPECT_EQ(e.osabi, 69);
  EXPECT_EQ(e.platform, "aie2p");
  EXPECT_EQ(e.ctrltext_bytes, 64u);
  EXPECT_EQ(e.ctrldata_bytes, 16u);
  EXPECT_EQ(e.relocations, 2u);
  EXPECT_EQ(e.patched_symbols, (std::vector<std::string>{"arg_a", "arg_b"}));
  ElfSpec g;
  g.osabi = 70;
  g.relocations = false;
  const CtrlElf e2 = parse_ctrl_elf(build_ctrl_elf(g), "g.elf");
  EXPECT_EQ(e2.platform, "aie2ps-group");
  EXPECT_EQ(e2.relocations, 0u);
}

void expect_bad(const std::vector<std::uint8_t>& b, const std::string& needle) {
  try {
    parse_ctrl_elf(b, "bad.elf");
    ADD_FAILURE() << "accepted, expected: " << needle;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.elf"), std::string::npos) << e.what();
  }
}

TEST(CtrlElf, RejectsWhatIsNotControlCode) {
  ElfSpec s;
  s.osabi = 3;  // Linux
  expect_bad(build_ctrl_elf(s), "OS ABI");
  s = ElfSpec{};
  s.ctrltext = false;
  expect_bad(build_ctrl_elf(s), ".ctrltext");
  s = ElfSpec{};
  s.reloc_symbol = 7;  // only 3 symbols
  expect_bad(build_ctrl_elf(s), "symbol 7");
}

TEST(CtrlElf, CorruptFilesAreInputErrors) {
  const auto good = build_ctrl_elf(ElfSpec{});
  auto b = good;
  b[1] = 'X';
  expect_bad(b, "magic");
  expect_bad({}, "magic");
  // Truncated after the header: the section table is gone.
  expect_bad(std::vector<std::uint8_t>(good.begin(), good.begin() + 52), "");
  for (std::size_t n = 0; n < good.size(); n += 13) {
    try {
      parse_ctrl_elf(std::vector<std::uint8_t>(good.begin(), good.begin() + n), "t");
      ADD_FAILURE() << "accepted a " << n << "-byte prefix";
    } catch (const InputError&) {
    }
  }
  // A section whose data lies past the end of the file.
  Elf32_Ehdr eh;
  std::memcpy(&eh, good.data(), sizeof eh);
  b = good;
  const std::size_t sh1 = eh.e_shoff + eh.e_shentsize;  // section 1: .ctrltext
  Elf32_Shdr sh;
  std::memcpy(&sh, b.data() + sh1, sizeof sh);
  sh.sh_offset = std::uint32_t(good.size() + 100);
  std::memcpy(b.data() + sh1, &sh, sizeof sh);
  expect_bad(b, "past the end");
  // Section header table offset past the end.
  b = good;
  eh.e_shoff = std::uint32_t(good.size() + 1000);
  std::memcpy(b.data(), &eh, sizeof eh);
  expect_bad(b, "");
}

TEST(CtrlElf, RandomCorruptionNeverCrashes) {
  const auto good = build_ctrl_elf(ElfSpec{});
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) {
    auto b = good;
    for (int f = 0; f < 3; ++f) b[16 + rng() % (b.size() - 16)] = std::uint8_t(rng());
    try {
      parse_ctrl_elf(b, "fuzz");
    } catch (const InputError&) {
    }
  }
  SUCCEED();
}

}  // namespace
}  // namespace flopwatt::npu::xdna
