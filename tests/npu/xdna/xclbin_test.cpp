#include "npu/xdna/xclbin.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tests/npu/xdna/artifact_builders.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {
namespace {

using test::build_xclbin;
using test::XclbinSpec;

template <class T>
T peek(const std::vector<std::uint8_t>& b, std::size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

template <class T>
void poke(std::vector<std::uint8_t>& b, std::size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}

TEST(Xclbin, ParsesAValidDesign) {
  XclbinSpec s;
  const auto b = build_xclbin(s);
  const Xclbin x = parse_xclbin(b, "t.xclbin");
  EXPECT_EQ(x.length, b.size());
  ASSERT_EQ(x.sections.size(), 3u);
  ASSERT_TRUE(x.has_partition);
  EXPECT_EQ(x.partition.name, "QoS");
  EXPECT_EQ(x.partition.ops_per_cycle, 8192u);
  EXPECT_EQ(x.partition.column_width, 4);
  ASSERT_EQ(x.partition.start_columns.size(), 1u);
  EXPECT_EQ(x.partition.start_columns[0], 1);
  ASSERT_EQ(x.partition.pdis.size(), 1u);
  EXPECT_EQ(x.partition.pdis[0].image, s.pdi);
  EXPECT_EQ(x.partition.pdis[0].uuid[0], 1);
  ASSERT_EQ(x.partition.pdis[0].groups.size(), 1u);
  EXPECT_EQ(x.partition.pdis[0].groups[0].name, "DPU");
  EXPECT_EQ(x.partition.pdis[0].groups[0].kernel_ids, std::vector<std::uint64_t>{0x901});
  ASSERT_EQ(x.cus.size(), 1u);
  EXPECT_EQ(x.cus[0].name, "MLIR_AIE:MLIRAIE");
  EXPECT_EQ(x.cus[0].kernel_id, 0x901);
  ASSERT_EQ(x.metadata_kernels.size(), 1u);
  EXPECT_EQ(x.metadata_kernels[0].name, "MLIR_AIE");
  EXPECT_EQ(x.metadata_kernels[0].dpu_kernel_id, "0x901");
  EXPECT_EQ(x.pdi_for(0x901), &x.partition.pdis[0]);
  EXPECT_EQ(x.pdi_for(0x902), nullptr);
  EXPECT_NO_THROW(require_npu_design(x));
}

TEST(Xclbin, ComputeUnitFromMetadataWhenNoIpLayout) {
  XclbinSpec s;
  s.ip_layout = false;
  s.functional = 1;
  const Xclbin x = parse_xclbin(build_xclbin(s), "t.xclbin");
  ASSERT_EQ(x.cus.size(), 1u);
  EXPECT_EQ(x.cus[0].kernel_id, 0x901);
  EXPECT_EQ(x.cus[0].functional, 1);
  EXPECT_NO_THROW(require_npu_design(x));
}

TEST(Xclbin, DesignChecks) {
  XclbinSpec s;
  s.ip_layout = s.metadata = false;
  EXPECT_THROW(require_npu_design(parse_xclbin(build_xclbin(s), "t")), InputError) << "no compute unit";
  XclbinSpec k;
  k.kernel_id = 0x333;
  test::XclbinLayout lay;
  auto b = build_xclbin(k, &lay);
  // Make the IP_LAYOUT kernel id disagree with the PDI's.
  std::uint32_t props;
  std::memcpy(&props, b.data() + lay.ip_layout_offset + 12, 4);
  props = (props & 0xffffu) | (0x777u << 16);
  poke(b, lay.ip_layout_offset + 12, props);
  EXPECT_THROW(require_npu_design(parse_xclbin(b, "t")), InputError) << "no PDI serves the CU";
}

TEST(Xclbin, EachComputeUnitHasThePdiOfItsKernel) {
  XclbinSpec s;
  s.more_cus.push_back({"MLIR_AIE:SECOND", 0x902, 1, {9, 9, 9}});
  const Xclbin x = parse_xclbin(build_xclbin(s), "t");
  ASSERT_EQ(x.cus.size(), 2u);
  const auto pdis = cu_pdis(x);
  ASSERT_EQ(pdis.size(), 2u);
  EXPECT_EQ(pdis[0]->image, s.pdi);
  EXPECT_EQ(pdis[1]->image, (std::vector<std::uint8_t>{9, 9, 9}));
  // A second CU whose kernel no PDI serves: refused, naming it, though the
  // first CU is fine.
  s.more_cus[0].kernel_id = 0x903;
  test::XclbinLayout lay;
  auto b = build_xclbin(s, &lay);
  const std::uint32_t props = 1u | (1u << 4) | (0x904u << 16);
  poke(b, lay.ip_layout_offset + 8 + 80 + 4, props);
  try {
    require_npu_design(parse_xclbin(b, "t"));
    FAIL() << "a CU without a PDI passed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("MLIR_AIE:SECOND"), std::string::npos) << e.what();
  }
}

TEST(Xclbin, TheRegisterMapComesFromTheKernelsArguments) {
  XclbinSpec s;
  RegisterMap r = register_map(parse_xclbin(build_xclbin(s), "t"), 0);
  EXPECT_EQ(r.opcode, 0x0u);
  EXPECT_EQ(r.instr, 0x8u);
  EXPECT_EQ(r.ninstr, 0x10u);
  EXPECT_EQ(r.buffers, (std::vector<std::uint32_t>{0x14, 0x1c, 0x24, 0x2c, 0x34}));
  EXPECT_EQ(r.bytes, 0x3cu);
  s.first_buffer_offset = 0x18;
  r = register_map(parse_xclbin(build_xclbin(s), "t"), 0);
  EXPECT_EQ(r.buffers, (std::vector<std::uint32_t>{0x18, 0x20, 0x28, 0x30, 0x38}));
  EXPECT_EQ(r.bytes, 0x40u);
  s.metadata_args = false;
  r = register_map(parse_xclbin(build_xclbin(s), "t"), 0);
  EXPECT_EQ(r.buffers, RegisterMap{}.buffers) << "no arguments listed: mlir-aie's layout";
}

TEST(Xclbin, AnUnusableRegisterMapIsRefused) {
  XclbinSpec s;
  s.first_buffer_offset = 0x16;
  try {
    require_npu_design(parse_xclbin(build_xclbin(s), "t"));
    FAIL() << "an argument off a 32-bit boundary passed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'bo0' sits at offset 0x16"), std::string::npos) << e.what();
  }
  s.first_buffer_offset = 0xfffffff8;  // would wrap offset + size
  EXPECT_THROW(require_npu_design(parse_xclbin(build_xclbin(s), "t")), InputError);
  auto b = build_xclbin(XclbinSpec{});
  const std::string x(b.begin(), b.end());
  const auto at = x.find("\"ninstr\"");
  ASSERT_NE(at, std::string::npos);
  std::memcpy(b.data() + at + 1, "nwords", 6);
  try {
    require_npu_design(parse_xclbin(b, "t"));
    FAIL() << "a register map without ninstr passed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no 'ninstr' argument"), std::string::npos) << e.what();
  }
}

TEST(Xclbin, CorruptInputsAreInputErrors) {
  test::XclbinLayout lay;
  const auto good = build_xclbin(XclbinSpec{}, &lay);
  auto expect_bad = [](const std::vector<std::uint8_t>& b, const char* what) {
    try {
      parse_xclbin(b, "bad.xclbin");
      ADD_FAILURE() << "accepted: " << what;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.xclbin"), std::string::npos) << e.what();
    }
  };
  // Wrong magic.
  auto b = good;
  b[6] = '1';
  expect_bad(b, "magic xclbin1");
  // Truncated anywhere: every prefix.
  for (std::size_t n = 0; n < good.size(); n += 7) expect_bad(std::vector<std::uint8_t>(good.begin(), good.begin() + n), "truncated");
  // Header length beyond the file.
  b = good;
  poke<std::uint64_t>(b, 304, good.size() + 1);
  expect_bad(b, "length past the end");
  // Absurd section count; section offset and size past the end.
  b = good;
  poke<std::uint32_t>(b, 448, 0x20000);
  expect_bad(b, "too many sections");
  b = good;
  poke<std::uint32_t>(b, 448, 1000);
  expect_bad(b, "section table past the end");
  b = good;
  poke<std::uint64_t>(b, 456 + 24, good.size() - 4);
  expect_bad(b, "section data past the end");
  b = good;
  poke<std::uint64_t>(b, 456 + 24, ~0ull - 8);
  expect_bad(b, "section offset overflowing");
  // Inside AIE_PARTITION: PDI array, image, kernel ids and name past the section.
  const std::size_t p = lay.partition_offset;
  b = good;
  poke<std::uint32_t>(b, p + 124, 0x7ffffff0);
  expect_bad(b, "pdi array offset");
  b = good;
  poke<std::uint32_t>(b, p + 120, 100000);
  expect_bad(b, "pdi count");
  b = good;
  poke<std::uint32_t>(b, p + 4, 0xfffffff0);
  expect_bad(b, "name offset");
  // IP_LAYOUT with a negative or too-large count.
  b = good;
  poke<std::int32_t>(b, lay.ip_layout_offset, -1);
  expect_bad(b, "negative ip count");
  b = good;
  poke<std::int32_t>(b, lay.ip_layout_offset, 5);
  expect_bad(b, "ip count past the section");
}

TEST(Xclbin, RandomCorruptionNeverCrashes) {
  const auto good = build_xclbin(XclbinSpec{});
  std::mt19937 rng(11);
  int rejected = 0;
  for (int i = 0; i < 300; ++i) {
    auto b = good;
    for (int f = 0; f < 4; ++f) b[rng() % b.size()] = std::uint8_t(rng());
    try {
      const Xclbin x = parse_xclbin(b, "fuzz");
      (void)x;
    } catch (const InputError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
}

// Arrays pointing at the same bytes (found by a 39 KB file taking 41 s and
// 6.7 GB): the partition's arrays together may not claim more than the section.
TEST(Xclbin, OverlappingPartitionArraysAreRefused) {
  test::XclbinLayout lay;
  auto b = build_xclbin(XclbinSpec{}, &lay);
  const std::size_t p = lay.partition_offset;
  std::uint64_t size = 0;
  const std::uint32_t sections = peek<std::uint32_t>(b, 448);
  for (std::uint32_t i = 0; i < sections; ++i)
    if (peek<std::uint64_t>(b, 456 + 40 * i + 24) == p) size = peek<std::uint64_t>(b, 456 + 40 * i + 32);
  ASSERT_GT(size, 0u);
  EXPECT_NO_THROW(parse_xclbin(b, "good.xclbin"));
  const std::size_t pdi = p + peek<std::uint32_t>(b, p + 124);
  poke<std::uint32_t>(b, pdi + 16, std::uint32_t(size));  // the image is the whole section, header included
  poke<std::uint32_t>(b, pdi + 20, 0);
  try {
    parse_xclbin(b, "overlap.xclbin");
    ADD_FAILURE() << "accepted an image overlapping the partition header";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("overlaps"), std::string::npos) << e.what();
  }
}

TEST(Xclbin, LoadFromMissingFile) { EXPECT_THROW(load_xclbin("/nonexistent/x.xclbin"), InputError); }

}  // namespace
}  // namespace flopwatt::npu::xdna
