#include "npu/xdna/insts.h"

#include <gtest/gtest.h>

#include <cstring>

#include <fmt/format.h>

#include "tests/npu/npu_test_support.h"
#include "tests/npu/xdna/artifact_builders.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {
namespace {

std::vector<std::uint8_t> bytes_of(const std::vector<std::uint32_t>& w) {
  std::vector<std::uint8_t> b(w.size() * 4);
  std::memcpy(b.data(), w.data(), b.size());
  return b;
}

TEST(Insts, WalksATransactionStream) {
  const auto w = test::build_txn(3, 3);
  const InstStream s = parse_insts(bytes_of(w), "insts.bin");
  EXPECT_TRUE(s.transaction);
  EXPECT_EQ(s.dev_gen, 3);
  EXPECT_EQ(s.rows, 6);
  EXPECT_EQ(s.cols, 5);
  EXPECT_EQ(s.mem_tile_rows, 1);
  EXPECT_EQ(s.op_count, 3u + 1 + 3 + 1);
  EXPECT_EQ(s.ops_checked, s.op_count);
  EXPECT_EQ(s.ddr_patches, 3u);
  EXPECT_EQ(s.max_patch_arg, 2u);
  EXPECT_TRUE(s.note.empty()) << s.note;
  EXPECT_EQ(s.words, w);
}

TEST(Insts, TextForm) {
  const auto w = test::build_txn(1, 2, 4);
  std::string text;
  for (auto x : w) text += fmt::format("{:08x}\n", x);
  text += "\n";  // trailing blank lines are fine
  const InstStream s = parse_insts_text(text, "insts.txt");
  EXPECT_EQ(s.words, w);
  EXPECT_EQ(s.dev_gen, 4);
  npu::test::TempDir t;
  EXPECT_EQ(load_insts(t.write("insts.txt", text)).words, w);
  EXPECT_EQ(load_insts(t.write("insts.bin", std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4))).words, w);
  EXPECT_THROW(parse_insts_text("0000000g\n", "insts.txt"), InputError);
  EXPECT_THROW(parse_insts_text("123456789\n", "insts.txt"), InputError);
}

TEST(Insts, StreamWithoutHeaderPassesUnchecked) {
  const std::vector<std::uint32_t> w = {0x06030101, 0x00000105, 7, 99};  // gen 3 but major 1: not our header
  const InstStream s = parse_insts(bytes_of({0x11, 0x22, 0x33}), "old.bin");
  EXPECT_FALSE(s.transaction);
  EXPECT_FALSE(s.note.empty());
  EXPECT_FALSE(parse_insts(bytes_of(w), "x").transaction);
}

TEST(Insts, CorruptStreamsAreInputErrors) {
  const auto good = test::build_txn(2, 3);
  EXPECT_THROW(parse_insts({}, "e"), InputError);
  auto b = bytes_of(good);
  b.pop_back();
  EXPECT_THROW(parse_insts(b, "odd"), InputError) << "not whole words";
  // Truncated by whole words: the header's byte size disagrees.
  for (std::size_t n = 4; n < good.size(); ++n)
    EXPECT_THROW(parse_insts(bytes_of(std::vector<std::uint32_t>(good.begin(), good.begin() + n)), "trunc"), InputError) << n;
  // Consistent header size but an operation size running past the end.
  auto w = good;
  w[4 + 5] = 4000;  // first WRITE claims 1000 words
  EXPECT_THROW(parse_insts(bytes_of(w), "size"), InputError);
  w = good;
  w[4 + 5] = 2;  // smaller than its own fields
  EXPECT_THROW(parse_insts(bytes_of(w), "tiny"), InputError);
  w = good;
  w[2] += 5;  // more operations than the stream holds
  EXPECT_THROW(parse_insts(bytes_of(w), "count"), InputError);
}

TEST(Insts, UnknownOpcodeStopsTheWalkWithANote) {
  auto w = test::build_txn(1, 0);
  w[4] = 9;  // LOAD_PM_START: not decoded here
  const InstStream s = parse_insts(bytes_of(w), "x");
  EXPECT_EQ(s.ops_checked, 0u);
  EXPECT_NE(s.note.find("opcode 9"), std::string::npos) << s.note;
}

}  // namespace
}  // namespace flopwatt::npu::xdna
