// Pins the model figures the device files' "calibration" entries quote, so a
// change to a parameter or to the model that moves them fails here until the
// files are updated.
#include <gtest/gtest.h>

#include "npu/sim/sweep.h"
#include "npu/sim/timing_model.h"
#include "tests/npu/npu_test_support.h"

namespace flopwatt::npu {
namespace {

double tflops(const DeviceDesc& dev, const Plan& p) { return 2.0 * p.macs_useful() / device_seconds(dev, p) / 1e12; }

TEST(Calibration, PhoenixWholeArray4096AtMostHalfOfPeak) {
  const DeviceDesc dev = test::phoenix();
  const Plan p = make_plan(dev, {4096, 4096, 4096, DType::BF16}, {64, 64, 64}, 4);
  const double t = tflops(dev, p);
  EXPECT_NEAR(t, 2.98, 0.01);
  EXPECT_LE(t / (dev.peak_bf16_flop_per_s() / 1e12), 0.50);  // Xilinx/mlir-aie#2735
}

TEST(Calibration, StrixFiguresQuotedInTheDeviceFile) {
  const DeviceDesc dev = test::strix();
  EXPECT_NEAR(tflops(dev, make_plan(dev, {4096, 4096, 4096, DType::BF16}, {64, 64, 88}, 8)), 11.7, 0.05);
  const Plan small = make_plan(dev, {512, 512, 512, DType::BF16}, {32, 32, 32}, 4);
  EXPECT_NEAR((device_seconds(dev, small) + dev.submit_latency_s) * 1e6, 127, 1.0);
}

TEST(Calibration, PhoenixGpt2StepQuotedInTheDeviceFile) {
  const DeviceDesc dev = test::phoenix();
  const StepComparison c = compare_step(dev, gpt2_gemm_shapes(), {});  // host copies at the file's 20 GB/s
  EXPECT_NEAR(c.flop / 1e9, 189.9, 0.1);
  EXPECT_NEAR(c.strategies[0].time_s * 1e3, 325, 2);
  EXPECT_NEAR(c.flop / c.strategies[0].time_s / 1e12, 0.58, 0.01);
}

}  // namespace
}  // namespace flopwatt::npu
