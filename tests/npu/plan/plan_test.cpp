#include "npu/plan/plan.h"

#include <gtest/gtest.h>

#include <limits>

#include <nlohmann/json.hpp>

#include "tests/npu/npu_test_support.h"
#include "workloads/error.h"

namespace flopwatt::npu {
namespace {

// Awkward sizes plus GPT-2 124M's (B*T = 256, C = 768, 4C = 3072, Vp = 50304).
const std::int64_t kDims[] = {1, 7, 65, 257, 768, 3072, 50304};

void check_invariants(const DeviceDesc& dev, const Plan& p) {
  SCOPED_TRACE(p.describe());
  const auto& pr = p.problem;
  // L1 and L2 fit.
  EXPECT_LE(p.l1_bytes + dev.l1_reserved_bytes, dev.l1_bytes);
  EXPECT_EQ(p.l1_bytes, l1_buffer_bytes(p.tile, pr.out));
  EXPECT_LE(p.l2_bytes, dev.l2_bytes);
  // Micro-kernel divides the tile.
  EXPECT_EQ(p.tile.m % p.r, 0);
  EXPECT_EQ(p.tile.k % p.s, 0);
  EXPECT_EQ(p.tile.n % p.t, 0);
  // Padding covers the shape by less than one super-tile.
  EXPECT_GE(p.Mp, pr.M);
  EXPECT_GE(p.Np, pr.N);
  EXPECT_GE(p.Kp, pr.K);
  EXPECT_LT(p.Mp - pr.M, std::int64_t(p.rows) * p.tile.m);
  EXPECT_LT(p.Np - pr.N, std::int64_t(p.cols) * p.tile.n);
  EXPECT_LT(p.Kp - pr.K, p.k_chunk);
  EXPECT_EQ(p.tiles_m * p.rows * p.tile.m, p.Mp);
  EXPECT_EQ(p.tiles_n * p.cols * p.tile.n, p.Np);
  EXPECT_EQ(p.k_steps * p.tile.k, p.k_chunk);
  EXPECT_EQ(p.commands * p.k_chunk, p.Kp);
  EXPECT_GE(p.macs_issued(), p.macs_useful());
  // Byte counts agree with the closed forms of the whole-array mapping:
  // A is re-read for every column block, B for every row block.
  const double ob = double(dtype_size(pr.out));
  double ddr_a = 0, ddr_b = 0, ddr_c = 0, l1_a = 0, l1_b = 0, l1_c = 0;
  for (const auto& x : p.transfers) {
    EXPECT_GT(x.tile_bytes, 0);
    EXPECT_GT(x.count, 0);
    EXPECT_EQ(x.tile_bytes % 4, 0) << "DMA moves whole words";
    if (x.level == "ddr->l2" && x.operand == 'A') ddr_a += x.bytes();
    if (x.level == "ddr->l2" && x.operand == 'B') ddr_b += x.bytes();
    if (x.level == "l2->ddr") ddr_c += x.bytes();
    if (x.level == "l2->l1" && x.operand == 'A') l1_a += x.delivered_bytes();
    if (x.level == "l2->l1" && x.operand == 'B') l1_b += x.delivered_bytes();
    if (x.level == "l1->l2") l1_c += x.bytes();
  }
  EXPECT_DOUBLE_EQ(ddr_a, double(p.Mp) * p.Kp * 2 * p.tiles_n);
  EXPECT_DOUBLE_EQ(ddr_b, double(p.Kp) * p.Np * 2 * p.tiles_m);
  EXPECT_DOUBLE_EQ(ddr_c, double(p.Mp) * p.Np * ob * p.commands);
  EXPECT_DOUBLE_EQ(l1_a, double(p.Mp) * p.Kp * 2 * (p.Np / p.tile.n));  // each core of a row gets the row's A
  EXPECT_DOUBLE_EQ(l1_b, double(p.Kp) * p.Np * 2 * (p.Mp / p.tile.m));
  EXPECT_DOUBLE_EQ(l1_c, ddr_c);  // what the cores write is what leaves
  EXPECT_DOUBLE_EQ(p.ddr_bytes(), ddr_a + ddr_b + ddr_c);
}

TEST(Plan, InvariantsOnAwkwardShapesBothDevicesBothOutputs) {
  for (const DeviceDesc& dev : {test::phoenix(), test::strix()})
    for (DType out : {DType::F32, DType::BF16})
      for (auto M : kDims)
        for (auto N : {std::int64_t(1), std::int64_t(65), std::int64_t(2304)})
          for (auto K : {std::int64_t(7), std::int64_t(257), std::int64_t(768)}) {
            const GemmProblem p{M, N, K, out};
            check_invariants(dev, choose_plan(dev, p, [&](const Plan& x) { return proxy_cost(dev, x); }));
          }
}

TEST(Plan, FixedDesignWithKChunks) {
  const DeviceDesc dev = test::phoenix();
  const Plan p = make_plan(dev, {256, 768, 3072, DType::F32}, {64, 32, 64}, 4, 768);
  check_invariants(dev, p);
  EXPECT_EQ(p.commands, 4);
  EXPECT_EQ(p.k_steps, 24);
  const Plan q = make_plan(dev, {256, 768, 257, DType::F32}, {64, 32, 64}, 4, 768);
  EXPECT_EQ(q.Kp, 768);  // short K padded with zeros up to the design's K
  EXPECT_EQ(q.commands, 1);
}

TEST(Plan, RejectsDesignsThatDoNotFit) {
  const DeviceDesc dev = test::phoenix();
  // 64^3 with fp32 output: 2*(64*64+64*64)*2 + 2*64*64*4 = 64 KiB, no room for the stack.
  EXPECT_NE(check_design(dev, {64, 64, 64}, 4, DType::F32), "");
  EXPECT_EQ(check_design(dev, {64, 64, 64}, 4, DType::BF16), "");
  EXPECT_NE(check_design(dev, {62, 64, 64}, 4, DType::BF16), "") << "m must be a multiple of r=4";
  EXPECT_NE(check_design(dev, {64, 36, 64}, 4, DType::BF16), "") << "k must be a multiple of s=8";
  EXPECT_NE(check_design(dev, {64, 64, 64}, 8, DType::BF16), "") << "Phoenix has 4 usable columns";
  // mlir-aie's mm.cc expands the r x s x t micro-kernel 2x2: m % 2r and n % 2t
  // (fails on the planner before this check).
  EXPECT_NE(check_design(dev, {36, 64, 64}, 4, DType::BF16), "") << "m = 36 is 9 r=4 blocks, not pairs";
  EXPECT_NE(check_design(dev, {64, 64, 36}, 4, DType::BF16), "") << "n = 36 is 9 t=4 blocks, not pairs";
  EXPECT_EQ(check_design(dev, {40, 64, 40}, 4, DType::BF16), "");
  EXPECT_THROW(make_plan(dev, {256, 256, 256, DType::F32}, {64, 64, 64}, 4), InputError);
  EXPECT_THROW(make_plan(dev, {0, 256, 256, DType::F32}, {32, 32, 32}, 4), InputError);
  EXPECT_THROW(make_plan(dev, {256, 256, 256, DType::F32}, {32, 32, 32}, 4, 100), InputError);
}

// Sizes multiply into tile and transfer counts: a huge GEMM is refused, never
// planned with wrapped (negative) counts.
TEST(Plan, HugeShapesAreRefusedNotWrapped) {
  const DeviceDesc dev = test::phoenix();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  EXPECT_THROW(make_plan(dev, {kMax, 1, 1, DType::BF16}, {64, 64, 64}, 4), InputError);
  EXPECT_THROW(make_plan(dev, {1 << 30, 1 << 30, std::int64_t(1) << 40, DType::BF16}, {32, 32, 32}, 4, 32), InputError);
  EXPECT_THROW(make_plan(dev, {std::int64_t(1) << 40, std::int64_t(1) << 40, std::int64_t(1) << 40, DType::BF16},
                         {64, 64, 64}, 4),
               InputError);
  const Plan ok = make_plan(dev, {1 << 20, 1 << 20, 1 << 20, DType::BF16}, {64, 64, 64}, 4);
  for (const auto& t : ok.transfers) EXPECT_GT(t.count, 0) << t.level << " " << t.operand;
}

TEST(Plan, CandidatesAllFitAndCoverBothColumnCounts) {
  const DeviceDesc dev = test::strix();
  const auto c = candidate_designs(dev, DType::F32);
  ASSERT_FALSE(c.empty());
  bool eight = false;
  for (const auto& x : c) {
    EXPECT_EQ(check_design(dev, x.tile, x.cols, DType::F32), "");
    EXPECT_EQ(x.tile.m % (2 * dev.mmul_r), 0);
    EXPECT_EQ(x.tile.n % (2 * dev.mmul_t), 0);
    eight |= x.cols == 8;
  }
  EXPECT_TRUE(eight);
}

TEST(Plan, PrintsAndSerialises) {
  const DeviceDesc dev = test::phoenix();
  const Plan p = make_plan(dev, {257, 65, 7, DType::BF16}, {32, 32, 32}, 2);
  const std::string s = p.describe();
  for (const char* needle : {"257x65x7", "m=32 k=32 n=32", "ddr->l2", "l2->l1", "l1->l2", "l2->ddr", "padding"})
    EXPECT_NE(s.find(needle), std::string::npos) << needle << "\n" << s;
  const auto j = p.to_json();
  EXPECT_EQ(j["padded"]["M"], p.Mp);
  EXPECT_EQ(j["transfers"].size(), p.transfers.size());
  EXPECT_EQ(j["design_key"], p.design_key());
}

TEST(Plan, DesignKeyDistinguishesDesignsNotShapes) {
  const DeviceDesc dev = test::phoenix();
  const Plan a = make_plan(dev, {256, 768, 768, DType::F32}, {64, 32, 64}, 4, 768);
  const Plan b = make_plan(dev, {512, 2304, 700, DType::F32}, {64, 32, 64}, 4, 768);
  const Plan c = make_plan(dev, {256, 768, 768, DType::F32}, {64, 32, 32}, 4, 768);
  EXPECT_EQ(a.design_key(), b.design_key());
  EXPECT_NE(a.design_key(), c.design_key());
}

}  // namespace
}  // namespace flopwatt::npu
