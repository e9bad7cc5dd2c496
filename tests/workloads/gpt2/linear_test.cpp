// GemmRunner: llm.c's three GEMMs per linear layer plus bias, in fp32 and bf16,
// against plain loops in double; the transpose fallback; unsupported dtypes.
#include "workloads/gpt2/linear.h"

#include <gtest/gtest.h>

#include <limits>

#include "tests/workloads/gpt2/compare.h"
#include "tests/workloads/gpt2/naive_backend.h"
#include "workloads/error.h"

namespace flopwatt::gpt2 {
namespace {

using testing::all_close;
using testing::NaiveBackend;
using testing::random_vector;

struct Dims {
  int N, K, OC;
};
const Dims kDims[] = {{1, 1, 1}, {7, 65, 3}, {65, 7, 257}, {33, 64, 96}};

// Double-precision oracle; `round` applies bf16 rounding to GEMM operands.
void oracle(const Dims& d, const std::vector<float>& inp, const std::vector<float>& W, const std::vector<float>& bias,
            const std::vector<float>& dout, bool round, std::vector<float>& out, std::vector<float>& dinp,
            std::vector<float>& dW, std::vector<float>& db) {
  auto r = [&](float x) { return round ? double(round_to_bf16(x)) : double(x); };
  out.assign(std::size_t(d.N) * d.OC, 0);
  dinp.assign(std::size_t(d.N) * d.K, 0);
  for (int n = 0; n < d.N; ++n)
    for (int o = 0; o < d.OC; ++o) {
      double s = 0;
      for (int k = 0; k < d.K; ++k) s += r(inp[n * d.K + k]) * r(W[o * d.K + k]);
      out[n * d.OC + o] = float(s + bias[o]);
    }
  for (int n = 0; n < d.N; ++n)
    for (int k = 0; k < d.K; ++k) {
      double s = 0;
      for (int o = 0; o < d.OC; ++o) s += r(dout[n * d.OC + o]) * r(W[o * d.K + k]);
      dinp[n * d.K + k] = float(s);
    }
  for (int o = 0; o < d.OC; ++o) {
    double sb = 0;
    for (int n = 0; n < d.N; ++n) sb += dout[n * d.OC + o];
    db[o] += float(sb);
    for (int k = 0; k < d.K; ++k) {
      double s = 0;
      for (int n = 0; n < d.N; ++n) s += r(dout[n * d.OC + o]) * r(inp[n * d.K + k]);
      dW[o * d.K + k] += float(s);
    }
  }
}

void check(Backend& be, DType dt) {
  for (const Dims& d : kDims) {
    for (bool acc : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "N=" << d.N << " K=" << d.K << " OC=" << d.OC << " acc=" << acc
                                        << " dtype=" << to_string(dt));
      GemmRunner run(be, dt);
      auto inp = random_vector(std::int64_t(d.N) * d.K, 1), W = random_vector(std::int64_t(d.OC) * d.K, 2);
      auto bias = random_vector(d.OC, 3), dout = random_vector(std::int64_t(d.N) * d.OC, 4);
      std::vector<bf16_t> W16(W.size());
      convert_to_bf16(W16.data(), W.data(), std::int64_t(W.size()));
      std::vector<float> out(std::size_t(d.N) * d.OC, std::numeric_limits<float>::quiet_NaN());
      std::vector<float> dinp(std::size_t(d.N) * d.K, std::numeric_limits<float>::quiet_NaN());
      auto dW = random_vector(W.size(), 5), db = random_vector(d.OC, 6);
      if (!acc) std::fill(dW.begin(), dW.end(), std::numeric_limits<float>::quiet_NaN());
      std::vector<float> rout, rdinp, rdW = acc ? dW : std::vector<float>(W.size(), 0.0f), rdb = db;
      oracle(d, inp, W, bias, dout, dt == DType::BF16, rout, rdinp, rdW, rdb);
      run.forward(out.data(), inp.data(), W.data(), W16.data(), bias.data(), d.N, d.K, d.OC);
      run.backward(dinp.data(), dW.data(), db.data(), dout.data(), inp.data(), W.data(), W16.data(), d.N, d.K, d.OC,
                   acc);
      EXPECT_TRUE(all_close("out", out, rout, 1e-5, 1e-5));
      EXPECT_TRUE(all_close("dinp", dinp, rdinp, 1e-5, 1e-5));
      EXPECT_TRUE(all_close("dW", dW, rdW, 1e-5, 1e-5));
      EXPECT_TRUE(all_close("dbias", db, rdb, 1e-5, 1e-5));
    }
  }
}

TEST(GemmRunner, Fp32) {
  NaiveBackend be;
  check(be, DType::F32);
}

TEST(GemmRunner, Bf16OperandsRoundedFp32Results) {
  NaiveBackend be;
  check(be, DType::BF16);
}

TEST(GemmRunner, TransposeFallbackForNnOnlyBackends) {
  NaiveBackend be(/*nn_only=*/true);
  check(be, DType::F32);
  check(be, DType::BF16);
}

TEST(GemmRunner, UnsupportedDtypeIsAnInputErrorNamingTheBackend) {
  NaiveBackend bf16_only(false, /*fp32=*/false, /*bf16=*/true);
  try {
    GemmRunner r(bf16_only, DType::F32);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(e.where().find("--gemm-backend test:naive"), std::string::npos) << e.what();
    EXPECT_NE(e.fix().find("--dtype bf16"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(GemmRunner(bf16_only, DType::BF16));
}

// Records the operands each call saw, to tell a kept conversion from a fresh one.
class RecordingBackend : public NaiveBackend {
 public:
  void gemm(const GemmDesc& d, const void* A, const void* B, void* C) override {
    seen.push_back({A, B});
    NaiveBackend::gemm(d, A, B, C);
  }
  std::vector<std::pair<const void*, const void*>> seen;
};

// backward's dW GEMM reads inp through forward's bf16 copy, not a second
// conversion; an inp changed in between is converted again, and either way the
// results are the float64 oracle's.
TEST(GemmRunner, BackwardUsesForwardsBf16InputUnlessItChanged) {
  const Dims d{37, 129, 66};
  for (bool interleaved : {false, true})
  for (bool change : {false, true}) {
    SCOPED_TRACE(::testing::Message() << (change ? "inp changed after forward" : "inp as forward saw it")
                                      << (interleaved ? ", interleaved in blocks of 8 rows" : ""));
    RecordingBackend be;
    GemmRunner run(be, DType::BF16);
    auto inp = random_vector(std::int64_t(d.N) * d.K, 1), W = random_vector(std::int64_t(d.OC) * d.K, 2);
    auto bias = random_vector(d.OC, 3), dout = random_vector(std::int64_t(d.N) * d.OC, 4);
    std::vector<bf16_t> W16(W.size());
    convert_to_bf16(W16.data(), W.data(), std::int64_t(W.size()));
    std::vector<float> out(std::size_t(d.N) * d.OC), dinp(std::size_t(d.N) * d.K), dW(W.size()), db(d.OC, 0.0f);
    run.set_grad_order(interleaved ? GradOrder::Interleaved : GradOrder::Standard, 0, 8);
    run.forward(out.data(), inp.data(), W.data(), W16.data(), bias.data(), d.N, d.K, d.OC);
    if (change)
      for (float& x : inp) x = 0.75f * x - 0.125f;
    run.backward(dinp.data(), dW.data(), db.data(), dout.data(), inp.data(), W.data(), W16.data(), d.N, d.K, d.OC,
                 false);
    // forward, then dX and dW per block of rows; each dW reads its block of inp.
    ASSERT_EQ(be.seen.size(), interleaved ? 1u + 2u * ((d.N + 7) / 8) : 3u);
    const auto* fwd_inp = static_cast<const bf16_t*>(be.seen[0].first);
    for (std::size_t call = 2, blk = 0; call < be.seen.size(); call += 2, ++blk) {
      const auto* dw_inp = static_cast<const bf16_t*>(be.seen[call].second);
      EXPECT_EQ(dw_inp == fwd_inp + blk * 8 * d.K, !change) << "block " << blk;
    }
    std::vector<float> rout, rdinp, rdW(W.size(), 0.0f), rdb(d.OC, 0.0f);
    oracle(d, inp, W, bias, dout, true, rout, rdinp, rdW, rdb);
    EXPECT_TRUE(all_close("dinp", dinp, rdinp, 1e-5, 1e-5));
    EXPECT_TRUE(all_close("dW", dW, rdW, 1e-5, 1e-5));
  }
}

// The bf16 conversion is part of the op and is reported in its breakdown, apart
// from the GEMMs; fp32 on a backend with every layout copies nothing.
TEST(GemmRunner, Bf16ConversionIsInTheOpsBreakdown) {
  const Dims d{64, 256, 192};
  auto inp = random_vector(std::int64_t(d.N) * d.K, 1), W = random_vector(std::int64_t(d.OC) * d.K, 2);
  auto dout = random_vector(std::int64_t(d.N) * d.OC, 4);
  std::vector<bf16_t> W16(W.size());
  convert_to_bf16(W16.data(), W.data(), std::int64_t(W.size()));
  std::vector<float> out(std::size_t(d.N) * d.OC), dinp(std::size_t(d.N) * d.K), dW(W.size());
  for (DType dt : {DType::BF16, DType::F32}) {
    SCOPED_TRACE(to_string(dt));
    NaiveBackend be;
    GemmRunner run(be, dt);
    Profiler prof;
    run.set_profiler(&prof);
    run.set_grad_order(GradOrder::Standard);
    run.forward(out.data(), inp.data(), W.data(), W16.data(), nullptr, d.N, d.K, d.OC);
    const double fwd_copy = prof.breakdown_total.copy_in;
    run.backward(dinp.data(), dW.data(), nullptr, dout.data(), inp.data(), W.data(), W16.data(), d.N, d.K, d.OC,
                 false);
    if (dt == DType::F32) {
      EXPECT_EQ(prof.breakdown_calls, 0);
      continue;
    }
    EXPECT_EQ(prof.breakdown_calls, 3);  // every GEMM of the op, so its compute is whole
    EXPECT_GT(fwd_copy, 0.0);
    EXPECT_GT(prof.breakdown_total.copy_in, fwd_copy) << "backward converts dout";
    EXPECT_GT(prof.breakdown_total.compute, 0.0);
  }
}

TEST(ConvertToBf16, MatchesScalarConversionIncludingSpecials) {
  auto x = random_vector(100003, 9, -1e3f, 1e3f);
  x[0] = std::numeric_limits<float>::quiet_NaN();
  x[1] = std::numeric_limits<float>::infinity();
  x[2] = -0.0f;
  x[3] = 3.3895314e38f;  // rounds to inf in bf16
  x[4] = 1.0039062f;     // halfway case, ties to even
  std::vector<bf16_t> y(x.size());
  convert_to_bf16(y.data(), x.data(), std::int64_t(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], f32_to_bf16(x[i])) << i << " " << x[i];
  EXPECT_TRUE(std::isnan(bf16_to_f32(y[0])));
}

}  // namespace
}  // namespace flopwatt::gpt2
