#include "npu/xdna/selftest.h"

#include <gtest/gtest.h>

#include "tests/npu/xdna/fake_rig.h"

namespace flopwatt::npu::xdna {
namespace {

void naive(const GemmDesc& d, const void* Av, const void* Bv, void* Cv) {
  const auto* A = static_cast<const bf16_t*>(Av);
  const auto* B = static_cast<const bf16_t*>(Bv);
  auto* C = static_cast<float*>(Cv);
  for (std::int64_t i = 0; i < d.M; ++i)
    for (std::int64_t j = 0; j < d.N; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < d.K; ++k) s += double(bf16_to_f32(A[i * d.K + k])) * bf16_to_f32(B[k * d.N + j]);
      C[i * d.N + j] = float(s);
    }
}

TEST(Selftest, EveryStageTimedAndTheResultChecked) {
  test::Rig rig;
  rig.designs = {{128, 64, 32}, {64, 32, 16}};
  const SelftestReport r = run_selftest(rig.config(), naive);
  EXPECT_TRUE(r.missing.empty()) << r.missing;
  EXPECT_TRUE(r.passed);
  std::vector<std::string> names;
  for (const auto& s : r.stages) {
    names.push_back(s.name);
    EXPECT_TRUE(s.ok) << s.name << ": " << s.detail;
    EXPECT_GE(s.seconds, 0);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"discover", "artifacts", "open", "load", "context", "buffers", "sync", "submit",
                                             "wait", "check"}));
  EXPECT_NE(r.stages[3].detail.find("design g1 "), std::string::npos) << "the smallest design: " << r.stages[3].detail;
  EXPECT_LE(r.rel_error, r.tolerance);
  ASSERT_TRUE(rig.ledger->closed);
  EXPECT_EQ(rig.ledger->bos + rig.ledger->contexts + rig.ledger->syncobjs, 0u) << "nothing left open";
}

// The PDI per CU goes through load_cu_pdis, as in the backend
// (XdnaBackend.EachComputeUnitGetsItsOwnPdi checks what the driver was told).
TEST(Selftest, ADesignWithTwoComputeUnitsPasses) {
  test::Rig rig;
  rig.designs = {{64, 32, 16, DType::F32, "npu1", "", true}};
  const SelftestReport r = run_selftest(rig.config(), naive);
  EXPECT_TRUE(r.passed) << r.missing;
  ASSERT_TRUE(rig.ledger->closed);
  EXPECT_EQ(rig.ledger->bos, 0u) << "both PDI buffers closed";
}

TEST(Selftest, AWrongResultFailsTheCheck) {
  test::Rig rig;
  rig.designs = {{64, 32, 16}};
  const SelftestReport r = run_selftest(rig.config(), [](const GemmDesc& d, const void* A, const void* B, void* C) {
    naive(d, A, B, C);
    static_cast<float*>(C)[5] += 100.0f;
  });
  EXPECT_FALSE(r.passed);
  EXPECT_FALSE(r.stages.back().ok);
  EXPECT_EQ(r.stages.back().name, "check");
}

TEST(Selftest, AFailedCommandIsReported) {
  test::Rig rig;
  rig.designs = {{64, 32, 16}};
  auto cfg = rig.config();
  auto opener = cfg.opener;
  cfg.opener = [&rig, opener](const std::string& p, int* e) {
    auto api = opener(p, e);
    rig.driver->next_states.push_back(test::upstream::kErtCmdStateTimeout);
    return api;
  };
  const SelftestReport r = run_selftest(cfg, naive);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.missing.empty());
  EXPECT_NE(r.stages.back().detail.find("TIMEOUT"), std::string::npos) << r.stages.back().detail;
}

TEST(Selftest, WithoutADeviceSaysWhatIsMissing) {
  XdnaBackendConfig c;
  c.root = std::string(FLOPWATT_TEST_FIXTURES) + "/npu/root-empty";
  const SelftestReport r = run_selftest(c, naive);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.missing.find("no amdxdna device"), std::string::npos) << r.missing;
  EXPECT_FALSE(r.fix.empty());
}

TEST(Selftest, WithoutDesignsForTheDeviceSaysWhichToBuild) {
  test::Rig rig;
  rig.designs = {{64, 32, 16, DType::F32, "npu4"}};
  const SelftestReport r = run_selftest(rig.config(), naive);
  EXPECT_NE(r.missing.find("no design for npu1"), std::string::npos) << r.missing;
  EXPECT_NE(r.fix.find("--device npu1"), std::string::npos) << r.fix;
}

}  // namespace
}  // namespace flopwatt::npu::xdna
