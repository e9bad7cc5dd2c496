// npu:xdna end to end against the upstream-behaving fake driver: the GEMM
// suite `run gemm --backend npu:xdna` runs, and one GPT-2 training step, each
// through more designs than the device's six hardware contexts, verified
// against cpu:reference.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <tuple>

#include "cpu/backends.h"
#include "harness/runners/gemm_runner.h"
#include "npu/xdna/xdna_backend.h"
#include "tests/npu/xdna/fake_rig.h"
#include "workloads/gpt2/config.h"
#include "workloads/gpt2/model.h"

namespace flopwatt {
namespace {

std::unique_ptr<Backend> cpu_reference() {
  for (auto& b : cpu::make_backends())
    if (b->name() == "cpu:reference") return std::move(b);
  return nullptr;
}

std::int64_t round_up(std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; }

TEST(NpuXdnaEndToEnd, GemmSuiteThroughMoreDesignsThanContexts) {
  namespace fs = std::filesystem;
  npu::xdna::test::Rig rig;
  rig.designs.clear();
  std::string shapes;
  for (int i = 0; i < 8; ++i) {  // eight shapes, eight designs, six contexts
    rig.designs.push_back({32 * (i + 1), 64, 32});
    shapes += (i ? ";" : "") + std::to_string(32 * (i + 1) - 3) + ",60,30";
  }
  npu::xdna::XdnaBackend xdna(rig.config());
  ASSERT_TRUE(xdna.availability().ok) << xdna.availability().reason;
  auto ref = cpu_reference();
  ASSERT_TRUE(ref);
  const fs::path dir = fs::temp_directory_path() / ("flopwatt_npu_e2e_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Session session(flopwatt::Run{}, dir.string());
  PowerOptions po;
  po.power = "none";
  EnergyMeter meter(po);
  GemmRunOptions o;
  o.shapes = parse_shapes(shapes, "--shapes");
  o.timing.min_time_s = 0;
  o.timing.min_reps = 3;
  ASSERT_TRUE(run_gemm_suite({ref.get(), &xdna}, o, session, meter, {}));
  int rows = 0;
  for (const auto& m : session.run().measurements) {
    if (m.backend != "npu:xdna") continue;
    ++rows;
    ASSERT_FALSE(m.skipped) << *m.skipped;
    ASSERT_TRUE(m.verified.has_value());
    EXPECT_TRUE(*m.verified) << m.shape->M << "x" << m.shape->N << "x" << m.shape->K << " error " << m.verify_rel_err.value_or(-1);
    ASSERT_TRUE(m.breakdown_s);
    // The design was loaded by the verification call; the timed repetitions
    // hold only copy in, submit, wait and copy out.
    EXPECT_EQ(m.breakdown_s->reconfigure, 0);
    EXPECT_GT(m.breakdown_s->copy_in, 0);
  }
  EXPECT_EQ(rows, 8);
  ASSERT_NE(rig.driver, nullptr);
  EXPECT_EQ(rig.driver->refused_contexts, 0);
  EXPECT_EQ(rig.driver->max_live_contexts, 6);
  EXPECT_GE(rig.driver->contexts_destroyed, 2);
  fs::remove_all(dir);
}

// A backend that forwards to another and keeps what went through it.
class Recording : public Backend {
 public:
  explicit Recording(Backend& b) : b_(b) {}
  std::string name() const override { return b_.name(); }
  Availability availability() const override { return b_.availability(); }
  bool supports(const GemmDesc& d) const override { return b_.supports(d); }
  void gemm(const GemmDesc& d, const void* A, const void* B, void* C) override {
    shapes.insert({d.M, d.N, d.K, d.dtype_out});
    b_.gemm(d, A, B, C);
    if (auto bd = b_.last_breakdown()) reconfigure_s += bd->reconfigure, compute_s += bd->compute, ++calls;
  }
  DType compute_dtype(const GemmDesc& d) const override { return b_.compute_dtype(d); }
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, DType>> shapes;
  double reconfigure_s = 0, compute_s = 0;
  int calls = 0;

 private:
  Backend& b_;
};

// One training step of the tiny GPT-2 (L=2, C=32, Vp=128) with every GEMM on
// the fake NPU, against the same step on cpu:reference. Tolerances: bf16
// inputs (relative rounding 2^-9) over K <= 128 sums: loss within 1e-2
// relative, each gradient within 5e-2 relative Frobenius error.
TEST(NpuXdnaEndToEnd, Gpt2StepThroughMoreDesignsThanContexts) {
  const gpt2::Config cfg = gpt2::preset("tiny");
  const int B = 2, T = 16;
  std::vector<int> tokens(B * T + 1);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = int((i * 37 + 11) % std::size_t(cfg.V));
  auto ref = cpu_reference();
  Recording rec(*ref);
  gpt2::Model want(cfg, rec, DType::F32);
  want.init_random(7);
  want.forward(tokens.data(), tokens.data() + 1, B, T);
  want.zero_grad();
  want.backward();

  npu::xdna::test::Rig rig;
  rig.designs.clear();
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, DType>> padded;
  for (const auto& [M, N, K, out] : rec.shapes) padded.insert({round_up(M, 32), round_up(N, 32), round_up(K, 8), out});
  padded.insert({64, 64, 64, DType::F32});  // the model asks whether the backend runs fp32 GEMMs at all
  for (const auto& [M, N, K, out] : padded) rig.designs.push_back({M, N, K, out});
  ASSERT_GT(rig.designs.size(), 6u) << "the step must need more designs than the device holds contexts";
  npu::xdna::XdnaBackend xdna(rig.config());
  ASSERT_TRUE(xdna.availability().ok) << xdna.availability().reason;
  Recording on_npu(xdna);
  gpt2::Model got(cfg, on_npu, DType::F32);
  got.init_random(7);
  got.forward(tokens.data(), tokens.data() + 1, B, T);
  got.zero_grad();
  got.backward();

  EXPECT_TRUE(std::isfinite(got.loss()));
  EXPECT_NEAR(got.loss(), want.loss(), 1e-2 * std::abs(want.loss()));
  const auto g = got.grads(), w = want.grads();
  ASSERT_EQ(g.size(), w.size());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < g.size(); ++i) num += (double(g[i]) - w[i]) * (double(g[i]) - w[i]), den += double(w[i]) * w[i];
  EXPECT_LE(std::sqrt(num / den), 5e-2);
  ASSERT_NE(rig.driver, nullptr);
  EXPECT_EQ(rig.driver->refused_contexts, 0);
  EXPECT_LE(rig.driver->max_live_contexts, 6);
  EXPECT_GT(rig.driver->contexts_destroyed, 0);
  EXPECT_GT(on_npu.calls, 0);
  EXPECT_GT(on_npu.reconfigure_s, 0) << "design switches are timed as reconfiguration";
}

}  // namespace
}  // namespace flopwatt
