#include "npu/xdna/xdna_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "tests/npu/npu_test_support.h"
#include "tests/npu/xdna/artifact_builders.h"
#include "tests/npu/xdna/fake_driver.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {
namespace {

const std::string kFixtures = std::string(FLOPWATT_TEST_FIXTURES) + "/npu";

TEST(XdnaBackend, UnavailableWithoutDeviceSaysWhy) {
  XdnaBackendConfig c;
  c.root = kFixtures + "/root-empty";
  c.artifacts_dir = "";
  XdnaBackend b(c);
  EXPECT_EQ(b.name(), "npu:xdna");
  EXPECT_FALSE(b.simulated());
  const Availability a = b.availability();
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.reason.find("no amdxdna device"), std::string::npos) << a.reason;
  GemmDesc d;
  d.M = d.N = d.K = 16;
  EXPECT_FALSE(b.supports(d));
  std::vector<float> A(256), B(256), C(256);
  EXPECT_THROW(b.gemm(d, A.data(), B.data(), C.data()), InputError);
  EXPECT_FALSE(b.notes().empty());
}

// A fixture root with a node, a fake driver behind it, and one design's
// artifacts (built here) listed in a manifest.
struct Rig {
  npu::test::TempDir root, art;
  test::FakeDriver* driver = nullptr;  // owned by the backend once opened
  std::int64_t M = 256, N = 128, K = 64;
  DType out = DType::F32;
  XdnaBackendConfig config() {
    root.write("dev/accel/accel0", "");
    test::XclbinSpec xs;
    const auto x = test::build_xclbin(xs);
    art.write("gemm.xclbin", std::string(x.begin(), x.end()));
    const auto w = test::build_txn(4, 3);
    art.write("insts.bin", std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4));
    nlohmann::json d = {{"name", "g"}, {"device", "npu1"}, {"xclbin", "gemm.xclbin"}, {"insts", "insts.bin"},
                        {"M", M}, {"N", N}, {"K", K}, {"tile", {{"m", 64}, {"k", 32}, {"n", 32}}},
                        {"array", {{"rows", 4}, {"cols", 4}}}, {"dtype_in", "bf16"},
                        {"dtype_out", std::string(to_string(out))}};
    art.write("manifest.json", nlohmann::json{{"schema", "flopwatt-npu-artifacts/1"}, {"designs", nlohmann::json::array({d})}}.dump());
    XdnaBackendConfig c;
    c.root = root.path();
    c.artifacts_dir = art.path();
    test::FakeDriver::Design fd{M, N, K, out, xs.pdi};
    c.opener = [this, fd](const std::string&, int*) -> std::unique_ptr<DriverApi> {
      auto p = std::make_unique<test::FakeDriver>(fd);
      driver = p.get();
      return p;
    };
    return c;
  }
};

TEST(XdnaBackend, FullHostFlowAgainstAFakeDriver) {
  Rig rig;
  XdnaBackend b(rig.config());
  ASSERT_TRUE(b.availability().ok) << b.availability().reason;
  GemmDesc d;
  d.M = 200, d.N = 100, d.K = 60, d.trans_b = true;  // padded into the 256x128x64 design
  d.alpha = 2.0f, d.beta = 0.5f;
  EXPECT_TRUE(b.supports(d));
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> A(d.M * d.K), B(d.N * d.K), C(d.M * d.N), C0;
  for (auto& x : A) x = u(rng);
  for (auto& x : B) x = u(rng);
  for (auto& x : C) x = u(rng);
  C0 = C;
  b.gemm(d, A.data(), B.data(), C.data());
  ASSERT_NE(rig.driver, nullptr);
  EXPECT_TRUE(rig.driver->heap_created);
  EXPECT_EQ(rig.driver->contexts, 1);
  EXPECT_EQ(rig.driver->configs, 1);
  EXPECT_EQ(rig.driver->execs, 1);
  EXPECT_EQ(rig.driver->last_max_opc, 8192u);
  EXPECT_EQ(rig.driver->last_num_tiles, 4u * 4u);  // column width x core rows from AIE metadata
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < d.M; ++i)
    for (std::int64_t j = 0; j < d.N; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < d.K; ++k) s += double(A[i * d.K + k]) * B[j * d.K + k];
      const double ref = 2.0 * s + 0.5 * C0[i * d.N + j];
      num += (C[i * d.N + j] - ref) * (C[i * d.N + j] - ref);
      den += ref * ref;
    }
  EXPECT_LE(std::sqrt(num / den), 1e-2);
  const auto bd = b.last_breakdown();
  ASSERT_TRUE(bd);
  EXPECT_GT(bd->reconfigure, 0) << "first use loads the design";
  EXPECT_GE(bd->copy_in, 0);
  // Second call: design resident, no new context.
  b.gemm(d, A.data(), B.data(), C.data());
  EXPECT_EQ(rig.driver->contexts, 1);
  EXPECT_EQ(rig.driver->execs, 2);
  EXPECT_EQ(b.last_breakdown()->reconfigure, 0);
  EXPECT_EQ(b.generation(), "npu1");
  // Too large for any design: unsupported, and gemm says which file to build.
  d.M = 1000;
  EXPECT_FALSE(b.supports(d));
  EXPECT_THROW(b.gemm(d, A.data(), B.data(), C.data()), InputError);
}

TEST(XdnaBackend, Bf16OutputDesign) {
  Rig rig;
  rig.out = DType::BF16;
  XdnaBackend b(rig.config());
  GemmDesc d;
  d.M = 256, d.N = 128, d.K = 64, d.dtype_out = DType::BF16;
  std::vector<float> A(d.M * d.K, 0.5f), B(d.K * d.N, 0.25f);
  std::vector<bf16_t> C(d.M * d.N);
  b.gemm(d, A.data(), B.data(), C.data());
  EXPECT_EQ(bf16_to_f32(C[0]), 8.0f);  // 64 * 0.125
  GemmDesc f = d;
  f.dtype_out = DType::F32;
  EXPECT_FALSE(b.supports(f)) << "no fp32-output design in the manifest";
}

}  // namespace
}  // namespace flopwatt::npu::xdna
