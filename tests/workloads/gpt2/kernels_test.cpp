// Fast kernels against the naive double-accumulating reference on awkward sizes.
// Tolerances are fp32-level: rtol 1e-5 for elementwise ops, 1e-4 where a
// kernel sums hundreds of terms in float (layernorm, attention, column sums).
#include "workloads/gpt2/kernels.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tests/workloads/gpt2/compare.h"
#include "workloads/gpt2/fast_math.h"

namespace flopwatt::gpt2 {
namespace {

using testing::all_close;
using testing::random_vector;

struct Rows {
  int N, C;
};
const Rows kRows[] = {{1, 1}, {1, 7}, {7, 65}, {65, 257}, {3, 768}, {257, 96}};

TEST(ExpFast, MatchesLibmAcrossTheRange) {
  for (float x = -87.0f; x <= 88.0f; x += 0.0137f) {
    const double want = std::exp(double(x));
    ASSERT_NEAR(exp_fast(x), want, 3e-7 * want) << "x=" << x;
  }
  EXPECT_EQ(exp_fast(0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(exp_fast(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_LT(exp_fast(-1000.0f), 1e-37f);
  EXPECT_TRUE(std::isfinite(exp_fast(1000.0f)));
}

#if defined(__AVX512F__)
// A 16-lane function against libm's double over [lo, hi]: lane j of each
// vector holds arg(x0 + step j), so the lanes differ and a lane mix-up shows.
template <class Simd, class Ref, class Arg>
void expect_lanes_match(Simd simd_fn, Ref ref, float lo, float hi, float step, double rel, Arg arg) {
  alignas(64) float in[16], out[16];
  for (float x0 = lo; x0 <= hi; x0 += step * 16) {
    for (int j = 0; j < 16; ++j) in[j] = arg(std::min(hi, x0 + step * j));
    _mm512_store_ps(out, simd_fn(_mm512_load_ps(in)));
    for (int j = 0; j < 16; ++j) {
      const double want = ref(double(in[j]));
      ASSERT_NEAR(out[j], want, rel * want) << "argument " << in[j];
    }
  }
}
const auto kSame = [](float x) { return x; };

// The 16-lane exp the attention softmax uses, to the same bound as exp_fast;
// lanes hold different arguments so a lane mix-up shows.
TEST(ExpFast, SixteenLanesMatchLibm) {
  ASSERT_NO_FATAL_FAILURE(expect_lanes_match(simd::exp16, [](double x) { return std::exp(x); }, -87.0f, 88.0f,
                                             0.0137f, 3e-7, kSame));
  alignas(64) float in[16], out[16];
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float special[16] = {0.0f, nan, -1000.0f, 1000.0f, -inf, inf, -0.0f, 1.0f, nan, 2.0f, -2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f};
  std::copy(special, special + 16, in);
  _mm512_store_ps(out, simd::exp16(_mm512_load_ps(in)));
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_TRUE(std::isnan(out[1]) && std::isnan(out[8]));
  EXPECT_LT(out[2], 1e-37f);
  EXPECT_TRUE(std::isfinite(out[3]));
  EXPECT_LT(out[4], 1e-37f);
  EXPECT_TRUE(std::isfinite(out[5]));
}

// The cross-entropy's 2^t over its whole domain (down to where it clamps), to
// 3e-7 relative like exp16; NaN stays NaN and -inf gives a tiny normal float.
TEST(ExpFast, SixteenLanesExp2MatchesLibm) {
  ASSERT_NO_FATAL_FAILURE(expect_lanes_match(simd::exp2_16, [](double t) { return std::exp2(t); }, -125.4f, 0.5f,
                                             0.00731f, 3e-7, kSame));
  alignas(64) float in[16], out[16];
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float special[16] = {0.0f, nan, -1000.0f, -inf, -0.0f, -1.0f, nan, -125.5f, -126.0f, -149.0f,
                             -0.5f, 0.5f, -10.25f, -3.5f, -64.0f, -100.0f};
  std::copy(special, special + 16, in);
  _mm512_store_ps(out, simd::exp2_16(_mm512_load_ps(in)));
  EXPECT_NEAR(out[0], 1.0f, 2e-7f);
  EXPECT_TRUE(std::isnan(out[1]) && std::isnan(out[6]));
  for (int j : {2, 3, 7, 8, 9}) {
    EXPECT_GE(out[j], std::numeric_limits<float>::min()) << "t=" << in[j];  // normal, never denormal or 0
    EXPECT_LT(out[j], 1e-37f) << "t=" << in[j];
  }
  EXPECT_NEAR(out[5], 0.5f, 1e-7f);
}

// GELU's sigmoid through exp2_16: 1 / (1 + 2^t), t = -z log2(e) for z in
// [-87, 88], to 4e-7, saturating to 0 and 1 without NaN.
TEST(ExpFast, SixteenLanesSigmoidOfExp2MatchesLibm) {
  const float l2e = 1.44269504088896341f;
  ASSERT_NO_FATAL_FAILURE(expect_lanes_match(
      simd::sigmoid_exp2_16, [](double t) { return 1.0 / (1.0 + std::exp2(t)); }, -87.0f, 88.0f, 0.0137f, 4e-7,
      [l2e](float z) { return -z * l2e; }));
  alignas(64) float in[16], out[16];
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float special[16] = {0.0f, nan, 1000.0f, -1000.0f, inf, -inf, 200.0f, -200.0f,
                             nan, 1.0f, -1.0f, 126.0f, 127.0f, 128.0f, -126.0f, -0.0f};
  std::copy(special, special + 16, in);
  _mm512_store_ps(out, simd::sigmoid_exp2_16(_mm512_load_ps(in)));
  EXPECT_EQ(out[0], 0.5f);
  EXPECT_TRUE(std::isnan(out[1]) && std::isnan(out[8]));
  for (int j : {2, 4, 6, 11, 12, 13}) EXPECT_NEAR(out[j], 0.0f, 1e-37f) << "t=" << in[j];
  for (int j : {3, 5, 7, 14}) EXPECT_EQ(out[j], 1.0f) << "t=" << in[j];
}
#endif

TEST(Kernels, EncoderForwardBackward) {
  // C = 300: three column tasks of the backward, the last one partial.
  for (int C : {65, 300}) {
    SCOPED_TRACE(C);
    const int B = 3, T = 5, V = 11, maxT = 7;
    std::vector<int> tok(B * T);
    for (int i = 0; i < B * T; ++i) tok[i] = (i * 7) % V;  // repeated tokens: exercises the race-free backward
    auto wte = random_vector(V * C, 1), wpe = random_vector(maxT * C, 2), dout = random_vector(B * T * C, 3);
    std::vector<float> out(B * T * C), ref(B * T * C);
    kernels::encoder_forward(out.data(), tok.data(), wte.data(), wpe.data(), B, T, C);
    reference::encoder_forward(ref.data(), tok.data(), wte.data(), wpe.data(), B, T, C);
    EXPECT_TRUE(all_close("encoder out", out, ref, 0, 0));
    auto dwte = random_vector(V * C, 4), dwpe = random_vector(maxT * C, 5);
    auto rdwte = dwte, rdwpe = dwpe;
    kernels::encoder_backward(dwte.data(), dwpe.data(), dout.data(), tok.data(), B, T, C);
    reference::encoder_backward(rdwte.data(), rdwpe.data(), dout.data(), tok.data(), B, T, C);
    EXPECT_TRUE(all_close("dwte", dwte, rdwte, 1e-5, 1e-6));
    EXPECT_TRUE(all_close("dwpe", dwpe, rdwpe, 1e-5, 1e-6));
  }
}

TEST(Kernels, LayerNormForward) {
  for (auto [N, C] : kRows) {
    SCOPED_TRACE(::testing::Message() << "N=" << N << " C=" << C);
    auto x = random_vector(std::int64_t(N) * C, 10, -3, 5), w = random_vector(C, 11), b = random_vector(C, 12);
    std::vector<float> out(x.size()), ref(x.size()), m(N), r(N), rm(N), rr(N);
    kernels::layernorm_forward(out.data(), m.data(), r.data(), x.data(), w.data(), b.data(), N, C);
    reference::layernorm_forward(ref.data(), rm.data(), rr.data(), x.data(), w.data(), b.data(), N, C);
    EXPECT_TRUE(all_close("ln out", out, ref, 1e-4, 1e-5));
    EXPECT_TRUE(all_close("ln mean", m, rm, 1e-5, 1e-6));
    EXPECT_TRUE(all_close("ln rstd", r, rr, 1e-4, 1e-6));
  }
}

// LayerNorm backward (accumulating into dx or overwriting it) against the
// float64 reference on random inputs drawn from seeds seed..seed+6, x in
// [x_lo, x_hi]: rtol 1e-4, atol 1e-5.
void expect_layernorm_backward_as_reference(int N, int C, bool acc, int seed, float x_lo, float x_hi) {
  auto x = random_vector(std::int64_t(N) * C, seed, x_lo, x_hi), w = random_vector(C, seed + 1),
       b = random_vector(C, seed + 2), dout = random_vector(x.size(), seed + 3);
  std::vector<float> y(x.size()), m(N), r(N);
  reference::layernorm_forward(y.data(), m.data(), r.data(), x.data(), w.data(), b.data(), N, C);
  auto dx = random_vector(x.size(), seed + 4), dw = random_vector(C, seed + 5), db = random_vector(C, seed + 6);
  auto rdx = dx, rdw = dw, rdb = db;
  kernels::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), m.data(), r.data(),
                              N, C, acc);
  reference::layernorm_backward(rdx.data(), rdw.data(), rdb.data(), dout.data(), x.data(), w.data(), m.data(),
                                r.data(), N, C, acc);
  EXPECT_TRUE(all_close("ln dx", dx, rdx, 1e-4, 1e-5));
  EXPECT_TRUE(all_close("ln dw", dw, rdw, 1e-4, 1e-5));
  EXPECT_TRUE(all_close("ln db", db, rdb, 1e-4, 1e-5));
}

TEST(Kernels, LayerNormBackwardAccumulatesOrOverwrites) {
  for (auto [N, C] : kRows) {
    for (bool acc : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "N=" << N << " C=" << C << " acc=" << acc);
      expect_layernorm_backward_as_reference(N, C, acc, 20, -2, 2);
    }
  }
}

// Widths around the 16-lane vectors and the 32-column main loop of the
// AVX-512 backward (C = 1, 15..17, 31..33, 47, 48, 257), one row, and row
// counts that leave a thread with one row or none (N = 1 and 3 at
// N C >= 2^14, where the kernel runs in parallel). x sits far from zero in
// some cases so x - mean cancels. Tolerance as above: rtol 1e-4, atol 1e-5.
TEST(Kernels, LayerNormBackwardAwkwardShapes) {
  const Rows shapes[] = {{1, 1},  {1, 15},  {1, 16},   {1, 17},    {2, 31}, {3, 32},
                         {3, 33}, {5, 47},  {4, 48},   {129, 130}, {9, 257}, {1, 20000},
                         {3, 6000}, {2, 8200}, {64, 768}};
  for (auto [N, C] : shapes) {
    for (float offset : {0.0f, 100.0f}) {
      for (bool acc : {true, false}) {
        SCOPED_TRACE(::testing::Message() << "N=" << N << " C=" << C << " offset=" << offset << " acc=" << acc);
        expect_layernorm_backward_as_reference(N, C, acc, 30, offset - 2, offset + 2);
      }
    }
  }
}

// The threads' partial dw and db are summed by whichever thread finishes
// last; a sum that read another thread's partial before it was complete would
// differ from call to call. Same inputs, same thread count: same bits.
TEST(Kernels, LayerNormBackwardSameBitsEveryCall) {
  const int N = 37, C = 1000;  // parallel (N C >= 2^14), rows split unevenly
  auto x = random_vector(std::int64_t(N) * C, 40), w = random_vector(C, 41), b = random_vector(C, 42),
       dout = random_vector(x.size(), 43);
  std::vector<float> y(x.size()), m(N), r(N);
  reference::layernorm_forward(y.data(), m.data(), r.data(), x.data(), w.data(), b.data(), N, C);
  std::vector<float> dx0(x.size()), dw0(C, 0.0f), db0(C, 0.0f);
  kernels::layernorm_backward(dx0.data(), dw0.data(), db0.data(), dout.data(), x.data(), w.data(), m.data(),
                              r.data(), N, C, false);
  for (int call = 0; call < 50; ++call) {
    std::vector<float> dx(x.size()), dw(C, 0.0f), db(C, 0.0f);
    kernels::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), m.data(),
                                r.data(), N, C, false);
    ASSERT_EQ(dx, dx0) << "call " << call;
    ASSERT_EQ(dw, dw0) << "call " << call;
    ASSERT_EQ(db, db0) << "call " << call;
  }
}

// A NaN in one row's dy or x makes that row's dx NaN (the row sums carry it to
// every column) and the dw/db columns it touches NaN; the other rows stay finite.
TEST(Kernels, LayerNormBackwardPassesNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (bool in_x : {false, true}) {
    for (auto [N, C] : {Rows{4, 33}, Rows{3, 6000}}) {
      SCOPED_TRACE(::testing::Message() << "N=" << N << " C=" << C << " nan in " << (in_x ? "x" : "dy"));
      auto x = random_vector(std::int64_t(N) * C, 50), w = random_vector(C, 51), b = random_vector(C, 52),
           dout = random_vector(x.size(), 53);
      std::vector<float> y(x.size()), m(N), r(N);
      reference::layernorm_forward(y.data(), m.data(), r.data(), x.data(), w.data(), b.data(), N, C);
      const int bad_row = 1, bad_col = C - 1;  // in the masked tail when C % 16 != 0
      (in_x ? x : dout)[std::size_t(bad_row) * C + bad_col] = nan;
      std::vector<float> dx(x.size(), 0.0f), dw(C, 0.0f), db(C, 0.0f);
      kernels::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), m.data(),
                                  r.data(), N, C, true);
      for (int n = 0; n < N; ++n)
        for (int i = 0; i < C; ++i)
          ASSERT_EQ(std::isnan(dx[std::size_t(n) * C + i]), n == bad_row) << "dx row " << n << " col " << i;
      EXPECT_TRUE(std::isnan(dw[bad_col]));
      EXPECT_EQ(std::isnan(db[bad_col]), !in_x);  // db sums dy only
      EXPECT_TRUE(std::isfinite(dw[0]) && std::isfinite(db[0]));
    }
  }
}

TEST(Kernels, BiasForwardBackward) {
  for (auto [N, OC] : kRows) {
    SCOPED_TRACE(::testing::Message() << "N=" << N << " OC=" << OC);
    auto out = random_vector(std::int64_t(N) * OC, 30), bias = random_vector(OC, 31);
    auto ref = out;
    kernels::bias_forward(out.data(), bias.data(), N, OC);
    reference::bias_forward(ref.data(), bias.data(), N, OC);
    EXPECT_TRUE(all_close("bias out", out, ref, 0, 0));
    auto db = random_vector(OC, 32);
    auto rdb = db;
    kernels::bias_backward(db.data(), out.data(), N, OC);
    reference::bias_backward(rdb.data(), out.data(), N, OC);
    EXPECT_TRUE(all_close("dbias", db, rdb, 1e-4, 1e-5));
  }
}

struct AttnShape {
  int B, T, C, NH;
};
// hs = C/NH: 4, 33, 257 take the per-row path; 16, 64 the blocked one (T of 1, 7, 17, 64, 65).
const AttnShape kAttn[] = {{1, 1, 4, 1},   {2, 7, 12, 3},  {1, 65, 66, 2},  {3, 17, 64, 4}, {1, 33, 257, 1},
                           {1, 1, 16, 1}, {1, 7, 32, 2}, {2, 64, 128, 2}, {2, 65, 128, 2}};

TEST(Kernels, AttentionForward) {
  for (auto [B, T, C, NH] : kAttn) {
    SCOPED_TRACE(::testing::Message() << "B=" << B << " T=" << T << " C=" << C << " NH=" << NH);
    auto qkv = random_vector(std::int64_t(B) * T * 3 * C, 40, -2, 2);
    std::vector<float> out(std::size_t(B) * T * C), ref(out.size());
    std::vector<float> att(std::size_t(B) * NH * T * T, 7.0f), ratt(att.size());
    kernels::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    reference::attention_forward(ref.data(), ratt.data(), qkv.data(), B, T, C, NH);
    EXPECT_TRUE(all_close("att", att, ratt, 1e-4, 1e-6));
    EXPECT_TRUE(all_close("atty", out, ref, 1e-4, 1e-5));
  }
}

TEST(Kernels, AttentionBackwardWritesEveryElement) {
  for (auto [B, T, C, NH] : kAttn) {
    SCOPED_TRACE(::testing::Message() << "B=" << B << " T=" << T << " C=" << C << " NH=" << NH);
    auto qkv = random_vector(std::int64_t(B) * T * 3 * C, 50, -2, 2);
    auto dout = random_vector(std::int64_t(B) * T * C, 51);
    std::vector<float> out(std::size_t(B) * T * C), att(std::size_t(B) * NH * T * T);
    reference::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    // Garbage in dqkv beforehand: the contract is "=", not "+=".
    std::vector<float> dqkv(qkv.size(), std::numeric_limits<float>::quiet_NaN()), ref(qkv.size());
    kernels::attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
    reference::attention_backward(ref.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
    EXPECT_TRUE(all_close("dqkv", dqkv, ref, 1e-4, 1e-5));
  }
}

TEST(Kernels, Gelu) {
  for (std::int64_t n : {1, 7, 65, 257, 100003}) {
    SCOPED_TRACE(n);
    auto x = random_vector(n, 60, -9, 9);
    x[0] = 0.0f;
    std::vector<float> y(n), ry(n);
    kernels::gelu_forward(y.data(), x.data(), n);
    reference::gelu_forward(ry.data(), x.data(), n);
    EXPECT_TRUE(all_close("gelu", y, ry, 2e-6, 1e-7));
    auto d = random_vector(n, 61);
    auto rd = d;
    kernels::gelu_backward_inplace(d.data(), x.data(), n);
    reference::gelu_backward_inplace(rd.data(), x.data(), n);
    EXPECT_TRUE(all_close("dgelu", d, rd, 2e-6, 1e-7));
  }
}

TEST(Kernels, GeluPassesNaN) {
  for (std::int64_t n : {5, 16, 100003}) {
    auto x = random_vector(n, 62, -3, 3);
    x[n - 1] = x[n / 2] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> y(n);
    kernels::gelu_forward(y.data(), x.data(), n);
    auto d = random_vector(n, 63);
    kernels::gelu_backward_inplace(d.data(), x.data(), n);
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(std::isnan(y[i]), std::isnan(x[i])) << i;
      ASSERT_EQ(std::isnan(d[i]), std::isnan(x[i])) << i;
    }
  }
}

// Spans of awkward sizes (empty, one float, odd lengths) next to guard floats
// that must stay untouched, on 1 to 4 threads: each thread's share starts and
// ends inside some span, and every float of every span still becomes 0.
TEST(Kernels, ZeroSpansClearsEveryFloatOfEverySpanAndNothingElse) {
  const std::int64_t sizes[] = {0, 1, 17, 5000, 0, 100003, 3, 65536};
  std::int64_t total = 0;
  for (auto n : sizes) total += n + 1;  // one guard after each span
  for (int threads = 1; threads <= 4; ++threads) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    std::vector<float> buf(std::size_t(total) + 1, std::numeric_limits<float>::quiet_NaN());
    std::vector<kernels::FloatSpan> spans;
    std::vector<bool> in_span(buf.size(), false);
    std::int64_t at = 1;  // a guard before the first span too
    for (auto n : sizes) {
      spans.push_back({buf.data() + at, n});
      for (std::int64_t i = at; i < at + n; ++i) in_span[std::size_t(i)] = true;
      at += n + 1;
    }
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    kernels::zero_spans(spans.data(), int(spans.size()));
    omp_set_num_threads(saved);
    std::int64_t zeros = 0, guards = 0;
    for (std::size_t i = 0; i < buf.size(); ++i) {
      if (in_span[i]) {
        ASSERT_EQ(buf[i], 0.0f) << "float " << i;
        ++zeros;
      } else {
        ASSERT_TRUE(std::isnan(buf[i])) << "guard " << i << " was written";
        ++guards;
      }
    }
    EXPECT_EQ(zeros, total - std::int64_t(std::size(sizes)));
    EXPECT_EQ(guards, std::int64_t(std::size(sizes)) + 1);
  }
  kernels::zero_spans(nullptr, 0);  // nothing to clear
}

TEST(Kernels, Residual) {
  const std::int64_t n = 65537;
  auto a = random_vector(n, 70), b = random_vector(n, 71);
  std::vector<float> o(n), r(n);
  kernels::residual_forward(o.data(), a.data(), b.data(), n);
  reference::residual_forward(r.data(), a.data(), b.data(), n);
  EXPECT_TRUE(all_close("residual", o, r, 0, 0));
}

// Absolute error bound of the kernel's lse = mx + log(s), s = sum of V terms
// exp_fast(x_i - mx), each in (0, 1], against an exact reference, u = 2^-24:
//  - the sum of V positive fp32 terms in any order is within gamma(V-1) =
//    (V-1)u / (1 - (V-1)u) of the exact sum, relatively (Higham, Accuracy and
//    Stability of Numerical Algorithms, 2nd ed., section 4.2);
//  - each term: the rounded argument x_i - mx (|.| <= max_arg) shifts exp by
//    max_arg * u relatively; exp_fast's range reduction, degree-7 Horner
//    polynomial (truncation below 5e-9 < u) and scaling add at most 32u;
//  - a relative error e in s is an absolute error e in log(s); log and the
//    final add round once each, u * |lse| at most both.
double lse_error_bound(int V, double max_arg, double max_lse) {
  const double u = 0x1p-24;
  const double gamma = (V - 1) * u / (1 - (V - 1) * u);
  return gamma + (max_arg + 32) * u + 2 * u * max_lse;
}

TEST(Kernels, SoftmaxCrossEntropyForwardAndBackward) {
  struct S {
    int N, V, Vp;
  };
  for (auto [N, V, Vp] : {S{1, 1, 128}, S{7, 65, 128}, S{5, 257, 384}, S{3, 50257, 50304}}) {
    SCOPED_TRACE(::testing::Message() << "N=" << N << " V=" << V << " Vp=" << Vp);
    auto logits = random_vector(std::int64_t(N) * Vp, 80, -8, 8);
    for (int n = 0; n < N; ++n)  // padding holds garbage the kernels must ignore
      for (int i = V; i < Vp; ++i) logits[std::size_t(n) * Vp + i] = 1e30f;
    std::vector<int> tg(N);
    for (int n = 0; n < N; ++n) tg[n] = (n * 31 + 3) % V;
    std::vector<float> loss(N), lse(N), rloss(N), rlse(N);
    kernels::softmax_xent_forward(loss.data(), lse.data(), logits.data(), tg.data(), N, V, Vp);
    reference::softmax_xent_forward(rloss.data(), rlse.data(), logits.data(), tg.data(), N, V, Vp);
    // The bound is derived from the fp32 arithmetic, not from one compiler's
    // summation order (it held at -O3 with AVX-512 but not at -O2 with SSE).
    double max_lse = 0;
    for (float v : rlse) max_lse = std::max(max_lse, std::abs(double(v)));
    const double bound = lse_error_bound(V, 16.0, max_lse);
    EXPECT_TRUE(all_close("lse", lse, rlse, 0.0, bound));
    EXPECT_TRUE(all_close("loss", loss, rloss, 0.0, bound + 0x1p-24 * (max_lse + 8)));
    auto d = logits, rd = logits;
    kernels::softmax_xent_backward_inplace(d.data(), lse.data(), tg.data(), 1.0f / N, N, V, Vp);
    reference::softmax_xent_backward_inplace(rd.data(), lse.data(), tg.data(), 1.0f / N, N, V, Vp);
    EXPECT_TRUE(all_close("dlogits", d, rd, 1e-5, 1e-9));
    for (int n = 0; n < N; ++n)
      for (int i = V; i < Vp; ++i) ASSERT_EQ(d[std::size_t(n) * Vp + i], 0.0f);
  }
}

TEST(Kernels, NaNLogitsGiveNaNLoss) {
  const int N = 2, V = 100, Vp = 128;
  auto logits = random_vector(N * Vp, 90);
  logits[Vp + 17] = std::numeric_limits<float>::quiet_NaN();
  std::vector<int> tg = {1, 2};
  std::vector<float> loss(N), lse(N);
  kernels::softmax_xent_forward(loss.data(), lse.data(), logits.data(), tg.data(), N, V, Vp);
  EXPECT_TRUE(std::isfinite(loss[0]));
  EXPECT_TRUE(std::isnan(loss[1]));
}

// The forward reads each row once in chunks, rescaling its running sum when a
// later chunk holds a larger logit: rows whose maximum sits in the first, a
// middle or the last (partial) chunk, and rows rising or falling along the
// vocabulary, against the reference; a NaN after the maximum, or in a chunk
// whose maximum is smaller, still gives a NaN loss.
TEST(Kernels, SoftmaxCrossEntropyForwardWhereverTheMaximumIs) {
  const int V = 5 * 2048 + 77, Vp = V + 3, N = 6;
  auto logits = random_vector(std::int64_t(N) * Vp, 91, -4, 4);
  auto row = [&](int n) { return logits.data() + std::int64_t(n) * Vp; };
  row(0)[3] = 30.0f;
  row(1)[2 * 2048 + 5] = 30.0f;
  row(2)[V - 1] = 30.0f;
  for (int i = 0; i < V; ++i) row(3)[i] = -20.0f + 40.0f * i / V;
  for (int i = 0; i < V; ++i) row(4)[i] = 20.0f - 40.0f * i / V;
  std::vector<int> tg = {0, 2 * 2048 + 5, V - 1, V - 2, 1, 7};
  std::vector<float> loss(N), lse(N), rloss(N), rlse(N);
  kernels::softmax_xent_forward(loss.data(), lse.data(), logits.data(), tg.data(), N, V, Vp);
  reference::softmax_xent_forward(rloss.data(), rlse.data(), logits.data(), tg.data(), N, V, Vp);
  const double bound = lse_error_bound(V, 50.0, 40.0);
  EXPECT_TRUE(all_close("lse", lse, rlse, 0.0, bound));
  EXPECT_TRUE(all_close("loss", loss, rloss, 0.0, bound + 0x1p-24 * 48));
  for (int n : {0, 5}) {
    auto bad = logits;
    bad[std::size_t(n) * Vp + 3 * 2048 + 1] = std::numeric_limits<float>::quiet_NaN();
    kernels::softmax_xent_forward(loss.data(), lse.data(), bad.data(), tg.data(), N, V, Vp);
    EXPECT_TRUE(std::isnan(loss[n])) << n;
    EXPECT_TRUE(std::isnan(lse[n])) << n;
  }
}

}  // namespace
}  // namespace flopwatt::gpt2
