#include "harness/runners/gemm_runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

namespace flopwatt {
namespace {

// A tiny exact GEMM for the test's own oracle, named like the real one so the
// runner uses it instead of constructing cpu:reference.
class NaiveBackend : public Backend {
 public:
  explicit NaiveBackend(std::string name, float error = 0, bool sim = false) : name_(std::move(name)), error_(error), sim_(sim) {}
  std::string name() const override { return name_; }
  Availability availability() const override { return {true, ""}; }
  bool supports(const GemmDesc& d) const override { return d.dtype_in == DType::F32 && !(d.trans_a && d.trans_b); }
  void gemm(const GemmDesc& d, const void* Av, const void* Bv, void* Cv) override {
    const float* A = static_cast<const float*>(Av);
    const float* B = static_cast<const float*>(Bv);
    float* C = static_cast<float*>(Cv);
    for (std::int64_t i = 0; i < d.M; ++i)
      for (std::int64_t j = 0; j < d.N; ++j) {
        double s = 0;
        for (std::int64_t k = 0; k < d.K; ++k) {
          const double a = d.trans_a ? A[k * d.eff_lda() + i] : A[i * d.eff_lda() + k];
          const double b = d.trans_b ? B[j * d.eff_ldb() + k] : B[k * d.eff_ldb() + j];
          s += a * b;
        }
        float& c = C[i * d.eff_ldc() + j];
        c = float(d.alpha * s + (d.beta != 0 ? d.beta * c : 0)) + error_;
      }
    calls_++;
  }
  bool simulated() const override { return sim_; }
  std::optional<Breakdown> last_breakdown() const override {
    if (!sim_) return std::nullopt;
    return Breakdown{0.001, 0.002, 0.001, 0.0001, 0};
  }
  std::optional<std::pair<std::string, double>> last_modelled_energy_j() const override {
    if (!sim_) return std::nullopt;
    return std::make_pair(std::string("npu-model:test"), 0.01);
  }
  int calls_ = 0;

 private:
  std::string name_;
  float error_;
  bool sim_;
};

TEST(GemmRunner, VerifiesTimesAndMarksFailuresAndSkips) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("flopwatt_runner_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  NaiveBackend ref("cpu:reference"), good("cpu:good"), bad("cpu:bad", 0.5f), sim("npu:sim-test", 0, true);
  Session session(flopwatt::Run{}, dir.string());
  PowerOptions po;
  po.power = "none";
  EnergyMeter meter(po);
  GemmRunOptions o;
  o.shapes = parse_shapes("7,65,3;1,1,1;5,6,7,TN;3,4,5,TT", "--shapes");
  o.timing.min_time_s = 0;
  o.timing.min_reps = 4;
  std::size_t seen = 0;
  ASSERT_TRUE(run_gemm_suite({&ref, &good, &bad, &sim}, o, session, meter,
                             [&](const Measurement&, std::size_t done, std::size_t total) {
                               EXPECT_EQ(done, ++seen);
                               EXPECT_EQ(total, 16u);
                             }));
  const auto& ms = session.run().measurements;
  ASSERT_EQ(ms.size(), 16u);
  for (const auto& m : ms) {
    if (m.layout == "TT") {
      EXPECT_TRUE(m.skipped.has_value()) << m.backend;
      continue;
    }
    ASSERT_FALSE(m.skipped.has_value());
    ASSERT_TRUE(m.verified.has_value());
    EXPECT_EQ(*m.verified, m.backend != "cpu:bad") << m.backend << " " << m.op;
    EXPECT_GE(m.reps, m.backend == "npu:sim-test" ? 3 : 4);
    EXPECT_EQ(m.rep_times_s.size(), std::size_t(m.reps));
    EXPECT_GT(m.flop_per_s, 0);
    if (m.backend == "npu:sim-test") {
      EXPECT_TRUE(m.simulated);
      EXPECT_NEAR(m.time_s.median, 0.0041, 1e-12);  // the modelled time, not the host's
      ASSERT_TRUE(m.energy.count("npu-model:test"));
      EXPECT_NEAR(m.energy.at("npu-model:test").j, 0.01 * m.reps, 1e-12);
      ASSERT_TRUE(m.breakdown_s.has_value());
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace flopwatt
