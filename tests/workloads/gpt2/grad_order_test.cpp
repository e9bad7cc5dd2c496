// The interleaved gradient order against the standard one, on every available
// CPU backend and the NPU simulators: same dX, dW and dbias for one linear
// layer, and the same loss and gradients for the whole model.
//
// Tolerance (derived, per element). Each of dX[n,k] = sum_o dY[n,o] W[o,k] and
// dW[o,k] = old + sum_n dY[n,o] X[n,k] is a sum of m terms (m = OC for dX,
// N, plus one for the old value, for dW). Any fp32 evaluation order, blocked,
// with FMA or not, lies within gamma_m * S of the exact sum of its inputs,
// gamma_m = m u / (1 - m u), u = 2^-24, S = sum of |terms| (Higham, Accuracy
// and Stability of Numerical Algorithms, 2nd ed., eq. 4.4). The two orders
// multiply the same inputs (bf16-rounded ones on a bf16 path), so they differ
// by at most 2 gamma_m S. S is computed in double from the fp32 inputs; a
// bf16-rounded input is at most (1 + 2^-8) times larger, so S is scaled by
// (1 + 2^-8)^2 on those paths. dbias is the same code in both orders: equal.
// A non-finite value never passes.
#include "workloads/gpt2/grad_order.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "cpu/backends.h"
#include "npu/backends.h"
#include "tests/sysfs/cpu0_cache_tree.h"
#include "tests/workloads/gpt2/compare.h"
#include "tests/workloads/gpt2/naive_backend.h"
#include "workloads/gpt2/checkpoint.h"
#include "workloads/gpt2/linear.h"
#include "workloads/gpt2/model.h"
#include "workloads/gpt2/op_table.h"
#include "workloads/gpt2/token_data.h"

namespace flopwatt::gpt2 {
namespace {

using testing::NaiveBackend;
using testing::random_vector;

constexpr double kU = 1.0 / 16777216.0;  // 2^-24
double gamma(double m) { return m * kU / (1.0 - m * kU); }

// |got - want| <= bound[i] for every element, both finite.
::testing::AssertionResult within(const std::string& what, const std::vector<float>& got,
                                  const std::vector<float>& want, const std::vector<double>& bound) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(want[i]))
      return ::testing::AssertionFailure() << what << "[" << i << "] not finite: " << got[i] << " vs " << want[i];
    const double d = std::abs(double(got[i]) - double(want[i]));
    if (d > bound[i])
      return ::testing::AssertionFailure() << what << "[" << i << "]: " << got[i] << " vs " << want[i] << ", |d| "
                                           << d << " > " << bound[i];
  }
  return ::testing::AssertionSuccess();
}

struct Case {
  int N, K, OC;
  std::int64_t block_rows;  // forced block size; ragged last blocks on purpose
};
const Case kCases[] = {{1, 1, 1, 1}, {67, 65, 257, 16}, {67, 65, 257, 1}, {33, 7, 3, 5},
                       {130, 96, 31, 64}, {29, 33, 17, 100}};

struct Result {
  std::vector<float> dinp, dW, db;
};

Result run_backward(Backend& be, DType dt, GradOrder o, const Case& c, bool acc, LinearBackwardPlan* plan = nullptr) {
  GemmRunner run(be, dt);
  run.set_grad_order(o, 0, c.block_rows);
  const auto inp = random_vector(std::int64_t(c.N) * c.K, 1), W = random_vector(std::int64_t(c.OC) * c.K, 2);
  const auto dout = random_vector(std::int64_t(c.N) * c.OC, 4);
  std::vector<bf16_t> W16(W.size());
  convert_to_bf16(W16.data(), W.data(), std::int64_t(W.size()));
  Result r;
  r.dinp.assign(std::size_t(c.N) * c.K, std::numeric_limits<float>::quiet_NaN());
  r.dW = acc ? random_vector(W.size(), 5) : std::vector<float>(W.size(), std::numeric_limits<float>::quiet_NaN());
  r.db = random_vector(c.OC, 6);
  run.backward(r.dinp.data(), r.dW.data(), r.db.data(), dout.data(), inp.data(), W.data(), W16.data(), c.N, c.K, c.OC,
               acc);
  if (plan) *plan = run.last_backward_plan();
  return r;
}

// The per-element bounds of the header comment for the inputs run_backward uses.
void bounds(const Case& c, bool acc, bool bf16, std::vector<double>& bdx, std::vector<double>& bdw) {
  const auto inp = random_vector(std::int64_t(c.N) * c.K, 1), W = random_vector(std::int64_t(c.OC) * c.K, 2);
  const auto dout = random_vector(std::int64_t(c.N) * c.OC, 4);
  const auto old = random_vector(W.size(), 5);
  const double scale = bf16 ? (1.0 + 1.0 / 256) * (1.0 + 1.0 / 256) : 1.0;
  bdx.assign(std::size_t(c.N) * c.K, 0);
  bdw.assign(W.size(), 0);
  for (int n = 0; n < c.N; ++n)
    for (int k = 0; k < c.K; ++k) {
      double s = 0;
      for (int o = 0; o < c.OC; ++o) s += std::abs(double(dout[n * c.OC + o]) * W[o * c.K + k]);
      bdx[n * c.K + k] = 2 * gamma(c.OC) * s * scale;
    }
  for (int o = 0; o < c.OC; ++o)
    for (int k = 0; k < c.K; ++k) {
      double s = acc ? std::abs(double(old[o * c.K + k])) : 0.0;
      for (int n = 0; n < c.N; ++n) s += std::abs(double(dout[n * c.OC + o]) * inp[n * c.K + k]) * scale;
      bdw[o * c.K + k] = 2 * gamma(c.N + (acc ? 1 : 0)) * s;
    }
}

// Every backend this machine can run, plus the test backend's NN-only fallback.
std::vector<std::unique_ptr<Backend>> backends() {
  std::vector<std::unique_ptr<Backend>> v;
  for (auto& b : cpu::make_backends())
    if (b->availability().ok) v.push_back(std::move(b));
  for (auto& b : npu::make_backends())
    if (b->simulated() && b->availability().ok) v.push_back(std::move(b));
  v.push_back(std::make_unique<NaiveBackend>(/*nn_only=*/true));
  return v;
}

TEST(GradOrder, InterleavedEqualsStandardOnEveryBackendWithinTheDerivedBound) {
  auto bes = backends();
  int npu_sims = 0;
  for (auto& be : bes) {
    if (be->simulated()) ++npu_sims;
    for (DType dt : {DType::F32, DType::BF16}) {
      GemmDesc probe;
      probe.M = probe.N = probe.K = 64;
      probe.dtype_in = dt;
      if (!be->supports(probe)) continue;
      // A backend that rounds fp32 operands to bf16 (the NPU) gets the bf16 bound.
      const bool bf16 = dt == DType::BF16 || be->compute_dtype(probe) == DType::BF16;
      for (const Case& c : kCases)
        for (bool acc : {false, true}) {
          SCOPED_TRACE(::testing::Message() << be->name() << " " << to_string(dt) << " N=" << c.N << " K=" << c.K
                                            << " OC=" << c.OC << " block=" << c.block_rows << " acc=" << acc);
          LinearBackwardPlan plan;
          const Result s = run_backward(*be, dt, GradOrder::Standard, c, acc);
          const Result i = run_backward(*be, dt, GradOrder::Interleaved, c, acc, &plan);
          ASSERT_TRUE(plan.interleaved);
          ASSERT_EQ(plan.block_rows, std::min<std::int64_t>(c.block_rows, c.N));
          std::vector<double> bdx, bdw;
          bounds(c, acc, bf16, bdx, bdw);
          EXPECT_TRUE(within("dinp", i.dinp, s.dinp, bdx));
          EXPECT_TRUE(within("dW", i.dW, s.dW, bdw));
          EXPECT_EQ(i.db, s.db);
        }
    }
  }
  EXPECT_GE(npu_sims, 1) << "no NPU simulator was available (device files not found?)";
}

TEST(GradOrder, TheCheckRejectsNanAndADroppedBlock) {
  NaiveBackend be;
  const Case c{67, 65, 257, 16};
  const Result s = run_backward(be, DType::F32, GradOrder::Standard, c, true);
  Result i = run_backward(be, DType::F32, GradOrder::Interleaved, c, true);
  std::vector<double> bdx, bdw;
  bounds(c, true, false, bdx, bdw);
  ASSERT_TRUE(within("dW", i.dW, s.dW, bdw));
  i.dW[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(within("dW", i.dW, s.dW, bdw));
  // Leaving out the last (3-row) block's contribution must be far outside the bound.
  Case shorter = c;
  shorter.N = 64;
  const Result partial = run_backward(be, DType::F32, GradOrder::Standard, shorter, true);
  EXPECT_FALSE(within("dW", partial.dW, s.dW, bdw));
}

// Half of the highest-level data or unified cache of the tree's cpu0, even
// when a lower level is larger; instruction caches do not hold dY or X.
TEST(GradOrder, BlockCacheBudgetFromTheCachesBelowTheRoot) {
  power::testing::FixtureTree t;
  using sysfs::testing::write_cpu0_cache;
  write_cpu0_cache(t, "index0", "1", "Data", "48K");
  write_cpu0_cache(t, "index1", "2", "Unified", "2048K");
  write_cpu0_cache(t, "index2", "3", "Unified", "1M");
  write_cpu0_cache(t, "index3", "4", "Instruction", "64M");
  EXPECT_EQ(default_block_cache_bytes(t.root()), 512 * 1024);
  EXPECT_EQ(default_block_cache_bytes(t.path("none")), std::int64_t(8) << 20);  // sysfs does not say
}

TEST(GradOrder, PlanFollowsTheTrafficModel) {
  // A dY that fits in the cache: interleaving saves nothing, auto keeps the standard order.
  const std::int64_t mib = 1 << 20;
  auto p = plan_linear_backward(GradOrder::Auto, 256, 768, 3072, 4, false, 16 * mib);
  EXPECT_FALSE(p.interleaved);
  // Hand count, N=4096 K=768 OC=3072 fp32, 16 MiB: block = 16 MiB / (3840*4) = 1092 rows, 4 blocks.
  const CpuBackwardTraffic t = cpu_backward_traffic(4096, 768, 3072, 4, false, 16 * mib);
  EXPECT_EQ(t.block_rows, 1092);
  EXPECT_EQ(t.blocks, 4);
  const double dY = 4096.0 * 3072 * 4, X = 4096.0 * 768 * 4, W = 3072.0 * 768 * 4;
  EXPECT_DOUBLE_EQ(t.standard_bytes, 2 * dY + W + X /*dX*/ + X + W /*dW*/);
  EXPECT_DOUBLE_EQ(t.interleaved_bytes, dY + X + X + 4 * W + 4 * W + 3 * W);
  // The explicit order always interleaves, with the model's block unless forced.
  p = plan_linear_backward(GradOrder::Interleaved, 4096, 768, 3072, 4, false, 16 * mib);
  EXPECT_TRUE(p.interleaved);
  EXPECT_EQ(p.block_rows, 1092);
  EXPECT_EQ(plan_linear_backward(GradOrder::Interleaved, 10, 7, 9, 4, false, mib, 3).block_rows, 3);
  EXPECT_FALSE(plan_linear_backward(GradOrder::Standard, 4096, 768, 3072, 4, false, 16 * mib).interleaved);
  // A wide, short layer whose W is small: reading dY once wins, auto interleaves.
  p = plan_linear_backward(GradOrder::Auto, 65536, 64, 4096, 4, false, 4 * mib);
  EXPECT_TRUE(p.interleaved);
  EXPECT_EQ(parse_grad_order("auto"), GradOrder::Auto);
  EXPECT_EQ(parse_grad_order("interleaved"), GradOrder::Interleaved);
  EXPECT_EQ(parse_grad_order("standard"), GradOrder::Standard);
  EXPECT_FALSE(parse_grad_order("dX-major"));
}

// The microbenchmark's pairs are the model's: each pair's FLOPs (plus
// dbias) and count equal the op table's backward op (written independently, from llm.c's
// matmul_backward), for GPT-2 124M at llm.c's B=4, T=1024.
TEST(GradOrder, BackwardPairsAreTheModelsLinearBackwards) {
  const Config c = preset("d12");
  const auto pairs = linear_backward_shapes(c, 4 * 1024);
  ASSERT_EQ(pairs.size(), 5u);
  const std::pair<const char*, Op> ops[] = {{"qkv", Op::QkvBwd}, {"attproj", Op::AttprojBwd}, {"fc", Op::FcBwd},
                                            {"fcproj", Op::FcprojBwd}, {"lm_head", Op::LmHeadBwd}};
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    SCOPED_TRACE(pairs[i].layer);
    EXPECT_EQ(pairs[i].layer, ops[i].first);
    EXPECT_EQ(pairs[i].N, 4096);
    // The op also sums dY's rows into dbias (N*OC adds); lm_head has no bias.
    const double dbias = pairs[i].layer == "lm_head" ? 0.0 : double(pairs[i].N) * double(pairs[i].OC);
    EXPECT_DOUBLE_EQ(pairs[i].flop() + dbias, op_cost(ops[i].second, c, 4, 1024, DType::F32).flop);
    EXPECT_EQ(pairs[i].count_per_step, op_occurrences(ops[i].second, c));
  }
}

// The whole model: one training step from the same parameters gives the same
// loss (the forward pass is untouched: bitwise) and gradients within a bound
// that composes the per-layer one: a gradient passes through at most 4L+1
// linear backwards, each adding at most 2 gamma_m of its operands' magnitude,
// so per tensor |d| <= (4L+1) 2 gamma_m max|g| with m the longest reduction
// (N tokens or Vp). The factor 4 for the nonlinear ops between (GELU,
// LayerNorm, attention backward) is an estimate, not a proof: their
// derivatives stay within a few units on this fixture. For the tiny model
// (L = 2, Vp = 128) the bound is 5.5e-4 of each tensor's largest gradient;
// leaving out one block's dW contribution exceeds it.
TEST(GradOrder, WholeModelLossAndEveryGradientMatchTheStandardOrder) {
  const std::string dir = std::string(FLOPWATT_TEST_FIXTURES) + "/gpt2/";
  const Config cfg = read_checkpoint_config(dir + "tiny_model.bin");
  const int B = 3, T = 7;  // N = 21 tokens, blocks of 4 rows: a ragged last block
  std::vector<int> in, tg;
  BatchLoader(read_token_file(dir + "tiny_tokens.bin", cfg.V), B, T).next(in, tg);
  for (auto& be : backends()) {
    if (!be->supports(GemmDesc{64, 64, 64})) continue;
    SCOPED_TRACE(be->name());
    Model s(cfg, *be, DType::F32), i(cfg, *be, DType::F32);
    s.load(dir + "tiny_model.bin");
    i.load(dir + "tiny_model.bin");
    i.set_grad_order(GradOrder::Interleaved, 0, 4);
    for (int step = 0; step < 2; ++step) {  // the second backward accumulates (no zero_grad)
      s.forward(in.data(), tg.data(), B, T);
      i.forward(in.data(), tg.data(), B, T);
      ASSERT_EQ(s.loss(), i.loss());
      ASSERT_TRUE(std::isfinite(i.loss()));
      if (step == 0) {
        s.zero_grad();
        i.zero_grad();
      }
      s.backward();
      i.backward();
      const double m = std::max(B * T + 1, cfg.Vp);
      const double tol_scale = (4.0 * cfg.L + 1) * 2 * gamma(m) * 4;
      for (int id = 0; id < kNumParams; ++id) {
        const std::int64_t off = s.param_offset(ParamId(id)), n = s.param_size(ParamId(id));
        std::vector<float> gs(s.grads().begin() + off, s.grads().begin() + off + n);
        std::vector<float> gi(i.grads().begin() + off, i.grads().begin() + off + n);
        double mx = 0;
        for (float g : gs) mx = std::max(mx, double(std::abs(g)));
        EXPECT_TRUE(within(std::string(kParamSpecs[id].name) + " step " + std::to_string(step), gi, gs,
                           std::vector<double>(gi.size(), tol_scale * mx)));
      }
    }
  }
}

}  // namespace
}  // namespace flopwatt::gpt2
