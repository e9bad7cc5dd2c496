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
  EXPECT_EQ(x.cus[0].kernel, "MLIR_AIE");
  EXPECT_EQ(x.cus[0].kernel_id, 0x901u);
  EXPECT_EQ(x.cus[0].pdi, 0u);
  ASSERT_EQ(x.ips.size(), 1u);
  ASSERT_EQ(x.metadata_kernels.size(), 1u);
  EXPECT_EQ(x.metadata_kernels[0].name, "MLIR_AIE");
  EXPECT_EQ(x.metadata_kernels[0].dpu_kernel_id, "0x901");
  EXPECT_EQ(x.pdi_for(0x901), &x.partition.pdis[0]);
  EXPECT_EQ(x.pdi_for(0x902), nullptr);
  EXPECT_NO_THROW(require_npu_design(x));
}

// XRT lists a kernel's CUs from IP_LAYOUT only (xrt_xclbin.cpp init_ips):
// without it there is none, and the shim refuses the xclbin.
TEST(Xclbin, NoIpLayoutMeansNoComputeUnitAsInXrt) {
  XclbinSpec s;
  s.ip_layout = false;
  const Xclbin x = parse_xclbin(build_xclbin(s), "t.xclbin");
  EXPECT_TRUE(x.cus.empty());
  EXPECT_THROW(require_npu_design(x), InputError);
  s.ip_layout = true;
  s.metadata = false;
  EXPECT_TRUE(parse_xclbin(build_xclbin(s), "t").cus.empty()) << "no kernel without EMBEDDED_METADATA";
}

// RyzenAI's 4x4_Overlay_CFG0 holds dpu_kernel_id 0x1010 in its XML and 0x010
// in IP_LAYOUT's 12-bit field; XRT takes the XML's (xclbin_parser.cpp
// get_kernel_id), and so must the PDI pairing.
TEST(Xclbin, TheKernelIdIsTheMetadatasNotIpLayouts) {
  XclbinSpec s;
  s.kernel_id = 0x1010;
  const Xclbin x = parse_xclbin(build_xclbin(s), "t");
  ASSERT_EQ(x.cus.size(), 1u);
  EXPECT_EQ(x.cus[0].kernel_id, 0x1010u);
  EXPECT_EQ(cu_pdis(x).at(0)->image, s.pdi);
  EXPECT_NO_THROW(require_npu_design(x));
}

// The shim looks a PDI up by the id cast to uint16_t (xdna-driver
// src/shim/hwctx.h get_pdi), so bits above 16 do not take part.
TEST(Xclbin, ThePdiLookupUsesSixteenBitsAsTheShimDoes) {
  XclbinSpec s;
  const Xclbin x = parse_xclbin(build_xclbin(s), "t");
  EXPECT_EQ(x.pdi_for(0x10901), &x.partition.pdis[0]);
  EXPECT_EQ(x.pdi_for(0x1901), nullptr);
}

// CUs per XML kernel, in XML order, by name prefix whatever the IP type
// (xrt_xclbin.cpp init_kernels, copy_if_name_match); a kernel no PDI serves
// is left out with all its CUs (src/shim/hwctx.cpp, ENOENT).
TEST(Xclbin, TheComputeUnitListIsXrts) {
  XclbinSpec s;
  s.cu_name = "DPU:A";
  s.more_cus = {{"vadd:vadd_1", 0, 0, {}, 1, 1},
                {"XDP_KERNEL:IPUV1CNN", 0x901, 0, {}, 7, 0},
                {"DPU:C", 0x901, 0, {}},
                {"SECOND:S", 0x902, 1, {9, 9, 9}}};
  const Xclbin x = parse_xclbin(build_xclbin(s), "t");
  EXPECT_EQ(x.ips.size(), 5u);
  std::vector<std::string> names;
  for (const auto& cu : x.cus) names.push_back(cu.name);
  EXPECT_EQ(names, (std::vector<std::string>{"DPU:A", "DPU:C", "XDP_KERNEL:IPUV1CNN", "SECOND:S"}));
  ASSERT_EQ(x.skipped_kernels.size(), 1u);
  EXPECT_EQ(x.skipped_kernels[0].name, "vadd");
  const auto pdis = cu_pdis(x);
  ASSERT_EQ(pdis.size(), 4u);
  EXPECT_EQ(pdis[0], pdis[2]) << "XDP_KERNEL shares the PDI of its dpu_kernel_id";
  EXPECT_EQ(pdis[3]->image, (std::vector<std::uint8_t>{9, 9, 9}));
  EXPECT_EQ(x.cus[3].functional, 1);
  EXPECT_EQ(judge_xclbin(x).command_cu, 0u);
}

// A name that only starts like the kernel's is not one of its CUs.
TEST(Xclbin, AComputeUnitNeedsTheKernelNameAndAColon) {
  XclbinSpec s;
  s.more_cus = {{"MLIR_AIEX:B", 0x901, 0, {}}, {"MLIR_AIE", 0x901, 0, {}}};
  const Xclbin x = parse_xclbin(build_xclbin(s), "t");
  ASSERT_EQ(x.cus.size(), 2u) << "no CU for the entry without a colon";
  EXPECT_EQ(x.cus[0].name, "MLIR_AIE:MLIRAIE");
  EXPECT_EQ(x.cus[1].name, "MLIR_AIEX:B");
  EXPECT_EQ(x.cus[1].kernel, "MLIR_AIEX") << "its own kernel's, not MLIR_AIE's";
}

TEST(Xclbin, ADpuOverlayIsReadAndJudgedNotRunnable) {
  XclbinSpec s;
  s.overlay_args = true;
  const Xclbin x = parse_xclbin(build_xclbin(s), "overlay.xclbin");
  ASSERT_EQ(x.cus.size(), 1u);
  const XclbinVerdict v = judge_xclbin(x);
  EXPECT_FALSE(v.runnable);
  EXPECT_NE(v.what.find("DPU overlay"), std::string::npos) << v.what;
  EXPECT_NE(v.why.find("opcode, instr and ninstr"), std::string::npos) << v.why;
  try {
    require_npu_design(x);
    FAIL() << "an overlay passed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("instruct/nistruct"), std::string::npos) << e.what();
  }
}

TEST(Xclbin, AGarbledKernelIdIsAnInputError) {
  auto b = build_xclbin(XclbinSpec{});
  const std::string x(b.begin(), b.end());
  const auto at = x.find("\"0x901\"");
  ASSERT_NE(at, std::string::npos);
  std::memcpy(b.data() + at + 1, "0xZ1", 4);
  EXPECT_THROW(parse_xclbin(b, "t"), InputError);
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
    register_map(parse_xclbin(build_xclbin(s), "t"), 0);
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
    register_map(parse_xclbin(b, "t"), 0);
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
