#include "npu/sim/residency.h"

#include <gtest/gtest.h>

#include "tests/npu/npu_test_support.h"

namespace flopwatt::npu {
namespace {

TEST(Residency, LoadPdiChargesEveryDesignChange) {
  const DeviceDesc dev = test::phoenix();
  DesignResidency r(dev, Reconfig::LoadPdi);
  EXPECT_DOUBLE_EQ(r.switch_to("a"), dev.reconfig_xclbin_s);  // first context and xclbin
  EXPECT_DOUBLE_EQ(r.switch_to("a"), 0.0);
  EXPECT_DOUBLE_EQ(r.switch_to("b"), dev.reconfig_load_pdi_s);
  EXPECT_DOUBLE_EQ(r.switch_to("a"), dev.reconfig_load_pdi_s);
  EXPECT_EQ(r.switches(), 2);
  EXPECT_EQ(r.loads(), 1);
}

TEST(Residency, XclbinKeepsUpToTheContextLimitResident) {
  DeviceDesc dev = test::phoenix();
  dev.hwctx_limit = 2;
  DesignResidency r(dev, Reconfig::Xclbin);
  EXPECT_DOUBLE_EQ(r.switch_to("a"), dev.reconfig_xclbin_s);
  EXPECT_DOUBLE_EQ(r.switch_to("b"), dev.reconfig_xclbin_s);
  EXPECT_DOUBLE_EQ(r.switch_to("a"), dev.reconfig_load_pdi_s);  // resident: a context switch
  EXPECT_DOUBLE_EQ(r.switch_to("c"), dev.reconfig_xclbin_s);    // evicts b, the least recent
  EXPECT_DOUBLE_EQ(r.switch_to("a"), dev.reconfig_load_pdi_s);
  EXPECT_DOUBLE_EQ(r.switch_to("b"), dev.reconfig_xclbin_s);
  EXPECT_EQ(r.loads(), 4);
}

}  // namespace
}  // namespace flopwatt::npu
