#include "npu/sim/sim_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "npu/backends.h"
#include "tests/npu/npu_test_support.h"
#include "workloads/error.h"

namespace flopwatt::npu {
namespace {

SimOptions fixed_host() {
  SimOptions o;
  o.host_copy_bytes_per_s = 20e9;  // deterministic: no host measurement in unit tests
  return o;
}

TEST(SimBackend, NamesAvailabilityAndLabels) {
  SimBackend b(test::phoenix(), fixed_host());
  EXPECT_EQ(b.name(), "npu:sim-phoenix");
  EXPECT_TRUE(b.availability().ok);
  EXPECT_TRUE(b.simulated());
  EXPECT_FALSE(b.last_breakdown());
  EXPECT_FALSE(b.last_modelled_energy_j());
  GemmDesc d;
  d.M = d.N = d.K = 8;
  EXPECT_TRUE(b.supports(d));
  d.dtype_acc = DType::BF16;
  EXPECT_FALSE(b.supports(d));
  EXPECT_FALSE(b.notes().empty());
}

TEST(SimBackend, MissingDeviceFileIsUnavailableWithTheReason) {
  SimBackend b("no-such-device", fixed_host());
  EXPECT_EQ(b.name(), "npu:sim-no-such-device");
  const Availability a = b.availability();
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.reason.find("FLOPWATT_NPU_DEVICES"), std::string::npos) << a.reason;
  GemmDesc d;
  d.M = d.N = d.K = 8;
  std::vector<float> A(64), B(64), C(64);
  EXPECT_THROW(b.gemm(d, A.data(), B.data(), C.data()), InputError);
}

TEST(SimBackend, ComputesVerifiedResultsWithBreakdownAndEnergy) {
  SimBackend b(test::strix(), fixed_host());
  GemmDesc d;
  d.M = 65, d.N = 257, d.K = 33, d.trans_b = true;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> A(d.M * d.K), B(d.N * d.K), C(d.M * d.N, 0.0f);
  for (auto& x : A) x = u(rng);
  for (auto& x : B) x = u(rng);
  b.gemm(d, A.data(), B.data(), C.data());
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < d.M; ++i)
    for (std::int64_t j = 0; j < d.N; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < d.K; ++k) s += double(A[i * d.K + k]) * B[j * d.K + k];
      num += (C[i * d.N + j] - s) * (C[i * d.N + j] - s);
      den += s * s;
    }
  EXPECT_LE(std::sqrt(num / den), 1e-2);
  const auto bd = b.last_breakdown();
  ASSERT_TRUE(bd);
  EXPECT_GT(bd->copy_in, 0);
  EXPECT_GT(bd->compute, 0);
  EXPECT_GT(bd->copy_out, 0);
  EXPECT_NEAR(bd->submit, 52e-6, 1e-12);
  EXPECT_GT(bd->reconfigure, 0) << "the first call loads the design";
  const auto e = b.last_modelled_energy_j();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->first, "npu-model:strix");
  EXPECT_GT(e->second, 0);
  // Same shape again: design already loaded.
  b.gemm(d, A.data(), B.data(), C.data());
  EXPECT_EQ(b.last_breakdown()->reconfigure, 0);
  EXPECT_NEAR(b.last_energy()->j, b.last_modelled_energy_j()->second, 0);
}

TEST(SimBackend, TimingOnlySkipsNumericsWithTheSameModel) {
  GemmDesc d;
  d.M = 256, d.N = 768, d.K = 3072;
  std::vector<float> A(d.M * d.K, 1.0f), B(d.K * d.N, 1.0f), C(d.M * d.N, -7.0f);
  SimBackend full(test::phoenix(), fixed_host());
  full.gemm(d, A.data(), B.data(), C.data());
  EXPECT_EQ(C[0], 3072.0f);
  SimOptions o = fixed_host();
  o.timing_only = true;
  SimBackend timing(test::phoenix(), o);
  std::vector<float> C2(d.M * d.N, -7.0f);
  timing.gemm(d, A.data(), B.data(), C2.data());
  EXPECT_EQ(C2[0], -7.0f) << "timing-only must not touch C";
  EXPECT_DOUBLE_EQ(timing.last_timing()->total(), full.last_timing()->total());
  EXPECT_DOUBLE_EQ(timing.last_energy()->j, full.last_energy()->j);
}

TEST(SimBackend, DesignChangesCostReconfigurationAndSinglePolicyAvoidsIt) {
  GemmDesc a, c;
  a.M = 256, a.N = 2304, a.K = 768;
  c.M = 256, c.N = 768, c.K = 3072;
  SimOptions o = fixed_host();
  o.timing_only = true;
  SimBackend per_shape(test::phoenix(), o);
  per_shape.gemm(a, nullptr, nullptr, nullptr);
  per_shape.gemm(c, nullptr, nullptr, nullptr);
  // K is baked into a design's core loop, so these two need different designs.
  EXPECT_NE(per_shape.plan_for(a).design_key(), per_shape.plan_for(c).design_key());
  EXPECT_DOUBLE_EQ(per_shape.last_timing()->reconfigure, per_shape.device().reconfig_load_pdi_s);
  o.policy = DesignPolicy::Single;
  SimBackend single(test::phoenix(), o);
  single.gemm(a, nullptr, nullptr, nullptr);
  single.gemm(c, nullptr, nullptr, nullptr);
  EXPECT_EQ(single.last_timing()->reconfigure, 0);
  EXPECT_EQ(single.plan_for(a).design_key(), single.plan_for(c).design_key());
}

TEST(SimBackend, Bf16InAndOut) {
  SimBackend b(test::phoenix(), fixed_host());
  GemmDesc d;
  d.M = 7, d.N = 65, d.K = 257, d.dtype_in = DType::BF16, d.dtype_out = DType::BF16;
  std::vector<bf16_t> A(d.M * d.K, f32_to_bf16(0.5f)), B(d.K * d.N, f32_to_bf16(0.25f)), C(d.M * d.N);
  b.gemm(d, A.data(), B.data(), C.data());
  // 257 * 0.125 = 32.125, exact in fp32; rounded per k-tile and at the end to bf16 (8 bits): 32.0.
  EXPECT_EQ(bf16_to_f32(C[0]), 32.0f);
  EXPECT_LT(b.last_breakdown()->copy_in,
            [&] {
              SimBackend f(test::phoenix(), fixed_host());
              GemmDesc g = d;
              g.dtype_in = DType::F32;
              f.set_timing_only(true);
              f.gemm(g, nullptr, nullptr, nullptr);
              return f.last_breakdown()->copy_in;
            }())
      << "bf16 operands need no conversion: fewer host bytes";
}

TEST(SimBackend, MakeBackendsListsAllThree) {
  ::setenv("FLOPWATT_NPU_HOST_GBS", "device", 1);
  const auto v = make_backends();
  ::unsetenv("FLOPWATT_NPU_HOST_GBS");
  std::vector<std::string> names;
  for (const auto& b : v) names.push_back(b->name());
  EXPECT_NE(std::find(names.begin(), names.end(), "npu:sim-phoenix"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "npu:sim-strix"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "npu:xdna"), names.end());
}

TEST(SimBackend, EnvironmentOptions) {
  ::setenv("FLOPWATT_NPU_DESIGN", "single", 1);
  ::setenv("FLOPWATT_NPU_RECONFIG", "bogus", 1);
  ::setenv("FLOPWATT_NPU_HOST_GBS", "12.5", 1);
  std::string bad;
  const SimOptions o = sim_options_from_env(&bad);
  ::unsetenv("FLOPWATT_NPU_DESIGN");
  ::unsetenv("FLOPWATT_NPU_RECONFIG");
  ::unsetenv("FLOPWATT_NPU_HOST_GBS");
  EXPECT_EQ(o.policy, DesignPolicy::Single);
  EXPECT_EQ(o.reconfig, Reconfig::LoadPdi);
  EXPECT_NE(bad.find("FLOPWATT_NPU_RECONFIG"), std::string::npos);
  EXPECT_DOUBLE_EQ(o.host_copy_bytes_per_s, 12.5e9);
}

}  // namespace
}  // namespace flopwatt::npu
