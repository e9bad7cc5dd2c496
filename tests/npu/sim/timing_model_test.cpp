#include "npu/sim/timing_model.h"

#include <gtest/gtest.h>

#include "tests/npu/npu_test_support.h"

namespace flopwatt::npu {
namespace {

const HostSide kHost{DType::F32, false, 20e9};

TEST(TimingModel, ReproducesThePublishedKernelEfficiencyAt64) {
  for (const DeviceDesc& dev : {test::phoenix(), test::strix()}) {
    const double ideal = 64.0 * 64 * 64 / dev.bf16_macs_per_cycle;
    EXPECT_NEAR(kernel_cycles(dev, {64, 64, 64}), ideal / dev.kernel_efficiency_64, 1e-6);
    // Smaller tiles pay the call overhead relatively more.
    const double eff32 = 32.0 * 32 * 32 / dev.bf16_macs_per_cycle / kernel_cycles(dev, {32, 32, 32});
    EXPECT_LT(eff32, dev.kernel_efficiency_64);
  }
}

TEST(TimingModel, NeverFasterThanPeakAndBreakdownSums) {
  for (const DeviceDesc& dev : {test::phoenix(), test::strix()})
    for (std::int64_t M : {1, 65, 256, 4096})
      for (std::int64_t N : {7, 768, 50304})
        for (std::int64_t K : {1, 257, 3072}) {
          const Plan p = best_plan(dev, {M, N, K, DType::F32});
          const SimTiming t = model_time(dev, p, kHost, 0.0);
          const double flop = 2.0 * M * N * K;
          EXPECT_GE(t.device, t.peak_bound);
          EXPECT_GE(t.device, flop / dev.peak_bf16_flop_per_s());
          EXPECT_GE(t.device, t.compute_only);
          EXPECT_GE(t.total(), t.device + dev.submit_latency_s);
          const Breakdown b = t.breakdown();
          EXPECT_NEAR(b.copy_in + b.compute + b.copy_out + b.submit + b.reconfigure, t.total(), 1e-15);
          EXPECT_GE(t.transfer(), 0.0);
          EXPECT_LE(t.transfer(), t.total());
        }
}

TEST(TimingModel, MonotonicInEveryDimension) {
  const DeviceDesc dev = test::phoenix();
  auto total = [&](std::int64_t M, std::int64_t N, std::int64_t K) {
    return model_time(dev, best_plan(dev, {M, N, K, DType::F32}), kHost, 0.0).total();
  };
  const std::int64_t sizes[] = {1, 7, 64, 65, 257, 768, 1000, 3072};
  for (std::size_t i = 1; i < std::size(sizes); ++i) {
    const auto a = sizes[i - 1], b = sizes[i];
    EXPECT_LE(total(a, 768, 768), total(b, 768, 768)) << a << "->" << b;
    EXPECT_LE(total(256, a, 768), total(256, b, 768)) << a << "->" << b;
    EXPECT_LE(total(256, 768, a), total(256, 768, b)) << a << "->" << b;
  }
}

TEST(TimingModel, HostCopiesScaleWithBytesAndDtype) {
  const DeviceDesc dev = test::phoenix();
  const Plan p = best_plan(dev, {256, 768, 768, DType::F32});
  const SimTiming f32 = model_time(dev, p, {DType::F32, false, 10e9}, 0.0);
  const SimTiming b16 = model_time(dev, p, {DType::BF16, false, 10e9}, 0.0);
  const SimTiming fast = model_time(dev, p, {DType::F32, false, 20e9}, 0.0);
  const SimTiming beta = model_time(dev, p, {DType::F32, true, 10e9}, 0.0);
  EXPECT_GT(f32.copy_in, b16.copy_in);  // fp32 operands are read at 4 bytes each
  EXPECT_NEAR(fast.copy_in * 2, f32.copy_in, 1e-15);
  EXPECT_GT(beta.copy_out, f32.copy_out);  // beta reads the old C
  // Exact byte count: read 256x768 and 768x768 fp32, write padded bf16 buffers.
  const double bytes_in = (256.0 * 768 + 768.0 * 768) * 4 + (double(p.Mp) * p.Kp + double(p.Kp) * p.Np) * 2;
  EXPECT_NEAR(f32.copy_in, bytes_in / 10e9, 1e-12);
}

TEST(TimingModel, SubmitLatencyPerCommandAndReconfigurationPassThrough) {
  const DeviceDesc dev = test::phoenix();
  const Plan one = make_plan(dev, {256, 768, 3072, DType::F32}, {64, 32, 64}, 4);
  const Plan four = make_plan(dev, {256, 768, 3072, DType::F32}, {64, 32, 64}, 4, 768);
  EXPECT_DOUBLE_EQ(model_time(dev, one, kHost, 0).submit, dev.submit_latency_s);
  EXPECT_DOUBLE_EQ(model_time(dev, four, kHost, 0).submit, 4 * dev.submit_latency_s);
  EXPECT_DOUBLE_EQ(model_time(dev, one, kHost, 0.02).reconfigure, 0.02);
  EXPECT_NEAR(dev.submit_latency_s, 110e-6, 1e-12);  // RyzenAI-SW#142
}

TEST(TimingModel, BoundFollowsTheScarceResource) {
  DeviceDesc dev = test::phoenix();
  const Plan p = make_plan(dev, {1024, 1024, 1024, DType::BF16}, {64, 64, 64}, 4);
  // At the measured 24 GB/s, 4 columns of 64^3 tiles want more DDR bytes per
  // step (64 KiB) than the kernel's 4096 cycles let through.
  EXPECT_EQ(model_time(dev, p, kHost, 0).bound, "ddr");
  const double ddr_bound = device_seconds(dev, p);
  dev.ddr_bytes_per_s = 1e12;
  EXPECT_EQ(model_time(dev, p, kHost, 0).bound, "compute");
  EXPECT_LT(device_seconds(dev, p), ddr_bound);
  // One column: a single shim channel carries A for all four rows (8192
  // cycles per step at 4 bytes/cycle), twice the kernel's time.
  const Plan one = make_plan(test::phoenix(), {1024, 1024, 1024, DType::BF16}, {64, 64, 64}, 1);
  EXPECT_EQ(model_time(test::phoenix(), one, kHost, 0).bound, "shim-dma");
  EXPECT_NEAR(model_time(test::phoenix(), one, kHost, 0).step_cycles, 4.0 * 64 * 64 * 2 / 4, 1e-9);
}

TEST(TimingModel, EnergyPositiveAndMadeOfItsParts) {
  for (const DeviceDesc& dev : {test::phoenix(), test::strix()}) {
    const Plan p = best_plan(dev, {256, 2304, 768, DType::F32});
    const SimTiming t = model_time(dev, p, kHost, 0.0);
    const SimEnergy e = model_energy(dev, p, t);
    EXPECT_GT(e.j, 0);
    EXPECT_GT(e.static_j, 0);
    EXPECT_GT(e.mac_j, 0);
    EXPECT_GT(e.ddr_j, 0);
    EXPECT_NEAR(e.j, e.static_j + e.mac_j + e.ddr_j + e.l2_j + e.l1_j, 1e-15);
    EXPECT_NEAR(e.mac_j, p.macs_issued() * dev.pj_per_mac * 1e-12, 1e-15);
    EXPECT_NEAR(e.avg_power_w, e.j / t.total(), 1e-12);
    // More work, more energy.
    const Plan q = best_plan(dev, {512, 2304, 768, DType::F32});
    EXPECT_GT(model_energy(dev, q, model_time(dev, q, kHost, 0.0)).j, e.j);
  }
}

}  // namespace
}  // namespace flopwatt::npu
