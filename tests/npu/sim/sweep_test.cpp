#include "npu/sim/sweep.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/npu/npu_test_support.h"

namespace flopwatt::npu {
namespace {

TEST(Sweep, RowsHaveSharesAndPlans) {
  const DeviceDesc dev = test::phoenix();
  const auto shapes = random_shapes(20, 1);
  ASSERT_EQ(shapes.size(), 20u);
  const auto rows = sweep_shapes(dev, shapes, {});
  ASSERT_EQ(rows.size(), 20u);
  for (const auto& r : rows) {
    EXPECT_GE(r.transfer_share(), 0);
    EXPECT_LE(r.transfer_share() + r.compute_share(), 1.0 + 1e-12);
    EXPECT_GT(r.timing.total(), 0);
    EXPECT_GT(r.energy.j, 0);
    EXPECT_EQ(r.timing.reconfigure, 0);
  }
  const std::string table = format_sweep(rows);
  EXPECT_NE(table.find("xfer%"), std::string::npos);
  const std::string csv = sweep_to_csv(rows);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 21);
  // Same seed, same shapes.
  EXPECT_EQ(random_shapes(5, 9)[3].desc.K, random_shapes(5, 9)[3].desc.K);
}

TEST(Sweep, StepSequenceFollowsLlmcOrder) {
  const auto shapes = gpt2_gemm_shapes();
  const auto seq = step_sequence(shapes);
  int total = 0;
  for (const auto& s : shapes) total += s.count_per_step;
  EXPECT_EQ(int(seq.size()), total);
  EXPECT_EQ(seq.front()->op, "qkv");
  EXPECT_EQ(seq[4]->op, "qkv") << "second layer starts after qkv, attproj, fc, fcproj";
  // The head ends the forward pass and starts the backward one.
  const std::size_t fwd = 4 * 12;
  EXPECT_EQ(seq[fwd]->op, "lm_head");
  EXPECT_EQ(seq[fwd + 1]->op, "lm_head_dinp");
  EXPECT_EQ(seq[fwd + 2]->op, "lm_head_dweight");
  EXPECT_EQ(seq[fwd + 3]->op, "fcproj_dinp");
  EXPECT_EQ(seq.back()->op, "qkv_dweight");
}

TEST(Sweep, StepComparisonShowsReconfigurationCost) {
  for (const DeviceDesc& dev : {test::phoenix(), test::strix()}) {
    const StepComparison c = compare_step(dev, gpt2_gemm_shapes(), {});
    ASSERT_EQ(c.strategies.size(), 4u);
    const auto& pdi = c.strategies[0];
    const auto& resident = c.strategies[1];
    const auto& xcl = c.strategies[2];
    const auto& one = c.strategies[3];
    EXPECT_GT(pdi.switches, 100) << "consecutive GEMMs of a step differ";
    EXPECT_NEAR(pdi.reconfigure_s, pdi.switches * dev.reconfig_load_pdi_s, 1e-12);
    EXPECT_GE(resident.reconfigure_s, pdi.reconfigure_s);
    EXPECT_NEAR(xcl.reconfigure_s, xcl.switches * dev.reconfig_xclbin_s, 1e-9);
    EXPECT_GT(xcl.time_s, one.time_s) << "a new context per switch costs more than padding";
    EXPECT_EQ(one.switches, 0);
    EXPECT_EQ(one.reconfigure_s, 0);
    EXPECT_EQ(one.designs, 1);
    EXPECT_GE(one.macs_issued, one.macs_useful);
    EXPECT_NEAR(pdi.macs_useful, one.macs_useful, 1.0);
    EXPECT_GT(c.flop, 0);
    EXPECT_FALSE(format_comparison(c).empty());
    const auto j = sweep_to_json({}, {c});
    EXPECT_EQ(j["step_comparison"][0]["strategies"].size(), 4u);
  }
}

}  // namespace
}  // namespace flopwatt::npu
