#include "npu/sim/numerics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "workloads/error.h"

namespace flopwatt::npu {
namespace {

struct Case {
  std::int64_t M, N, K;
  bool ta, tb;
};

// Awkward sizes: 1, 7, 65, 257 and sizes just off the kernel's 8x32 blocks.
const Case kCases[] = {{1, 1, 1, false, false},   {7, 65, 257, false, true},  {65, 7, 33, true, false},
                       {257, 33, 65, true, true}, {1, 300, 5, false, false},  {9, 31, 520, false, true},
                       {33, 65, 7, false, false}};

float a_at(const GemmDesc& d, const std::vector<float>& A, std::int64_t i, std::int64_t k) {
  return d.trans_a ? A[k * d.eff_lda() + i] : A[i * d.eff_lda() + k];
}
float b_at(const GemmDesc& d, const std::vector<float>& B, std::int64_t k, std::int64_t j) {
  return d.trans_b ? B[j * d.eff_ldb() + k] : B[k * d.eff_ldb() + j];
}

// The spec, written plainly: bf16-rounded inputs, fp32 sums in k order per
// command, bf16 rounding after every k-tile for bf16 output, commands summed
// in fp32, then alpha/beta.
std::vector<float> emulate(const GemmDesc& d, const std::vector<float>& A, const std::vector<float>& B,
                           const std::vector<float>& C0, int k_tile, std::int64_t k_chunk) {
  const bool bf = d.dtype_out == DType::BF16;
  if (k_chunk <= 0 || k_chunk > d.K) k_chunk = d.K;
  std::vector<float> C = C0;
  for (std::int64_t i = 0; i < d.M; ++i)
    for (std::int64_t j = 0; j < d.N; ++j) {
      float total = 0;
      for (std::int64_t c0 = 0; c0 < d.K; c0 += k_chunk) {
        const std::int64_t c1 = std::min(d.K, c0 + k_chunk);
        float acc = 0;
        for (std::int64_t k = c0; k < c1; ++k) {
          const float prod = round_to_bf16(a_at(d, A, i, k)) * round_to_bf16(b_at(d, B, k, j));
          acc = acc + prod;
          if (bf && ((k - c0 + 1) % k_tile == 0 || k == c1 - 1)) acc = round_to_bf16(acc);
        }
        total = c0 == 0 ? acc : total + acc;
      }
      float& c = C[i * d.eff_ldc() + j];
      const float v = (d.alpha == 1.0f && d.beta == 0.0f) ? total : d.alpha * total + (d.beta == 0.0f ? 0.0f : d.beta * c);
      c = bf ? round_to_bf16(v) : v;
    }
  return C;
}

// float64 product of the caller's unrounded inputs.
std::vector<double> exact(const GemmDesc& d, const std::vector<float>& A, const std::vector<float>& B,
                          const std::vector<float>& C0) {
  std::vector<double> C(C0.begin(), C0.end());
  for (std::int64_t i = 0; i < d.M; ++i)
    for (std::int64_t j = 0; j < d.N; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < d.K; ++k) s += double(a_at(d, A, i, k)) * double(b_at(d, B, k, j));
      double& c = C[i * d.eff_ldc() + j];
      c = d.alpha * s + (d.beta == 0.0f ? 0.0 : d.beta * c);
    }
  return C;
}

double rel_fro(const std::vector<float>& got, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    num += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);  // NaN when either side has one
}

struct Operands {
  std::vector<float> A, B, C0;
};

Operands make_inputs(const GemmDesc& d, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Operands r;
  const std::int64_t arows = d.trans_a ? d.K : d.M, brows = d.trans_b ? d.N : d.K;
  r.A.resize(arows * d.eff_lda());
  r.B.resize(brows * d.eff_ldb());
  r.C0.resize(d.M * d.eff_ldc());
  for (auto& x : r.A) x = u(rng);
  for (auto& x : r.B) x = u(rng);
  for (auto& x : r.C0) x = u(rng);
  return r;
}

// Runs the simulator with the caller's element types and returns C as floats.
std::vector<float> simulate(const GemmDesc& d, const Operands& r, int k_tile, std::int64_t k_chunk) {
  std::vector<bf16_t> Ab, Bb, Cb;
  const void *A = r.A.data(), *B = r.B.data();
  if (d.dtype_in == DType::BF16) {
    for (float x : r.A) Ab.push_back(f32_to_bf16(x));
    for (float x : r.B) Bb.push_back(f32_to_bf16(x));
    A = Ab.data(), B = Bb.data();
  }
  if (d.dtype_out == DType::BF16) {
    for (float x : r.C0) Cb.push_back(f32_to_bf16(x));
    simulate_gemm(d, A, B, Cb.data(), k_tile, k_chunk);
    std::vector<float> out;
    for (auto h : Cb) out.push_back(bf16_to_f32(h));
    return out;
  }
  std::vector<float> C = r.C0;
  simulate_gemm(d, A, B, C.data(), k_tile, k_chunk);
  return C;
}

bool bits_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(SimNumerics, Fp32OutputMatchesTheSpecBitForBitAndFloat64WithinBf16Tolerance) {
  unsigned seed = 1;
  for (const auto& c : kCases) {
    GemmDesc d;
    d.M = c.M, d.N = c.N, d.K = c.K, d.trans_a = c.ta, d.trans_b = c.tb;
    SCOPED_TRACE(::testing::Message() << d.M << "x" << d.N << "x" << d.K << " " << d.layout());
    const Operands r = make_inputs(d, seed++);
    const auto got = simulate(d, r, 32, 0);
    EXPECT_TRUE(bits_equal(got, emulate(d, r.A, r.B, r.C0, 32, 0)));
    // Tolerance for bf16 inputs with fp32 accumulation (the project's 1e-2).
    const double err = rel_fro(got, exact(d, r.A, r.B, r.C0));
    EXPECT_LE(err, 1e-2);
    // ... and the inputs really were rounded: fp32 arithmetic would be ~1e-7.
    if (d.K > 1) {
      EXPECT_GT(err, 1e-5);
    }
  }
}

TEST(SimNumerics, Bf16OutputRoundsPerKTile) {
  unsigned seed = 100;
  for (const auto& c : kCases)
    for (int k_tile : {8, 32, 64}) {
      GemmDesc d;
      d.M = c.M, d.N = c.N, d.K = c.K, d.trans_a = c.ta, d.trans_b = c.tb, d.dtype_out = DType::BF16;
      SCOPED_TRACE(::testing::Message() << d.M << "x" << d.N << "x" << d.K << " k_tile " << k_tile);
      const Operands r = make_inputs(d, seed++);
      const auto got = simulate(d, r, k_tile, 0);
      std::vector<float> c0r;
      for (float x : r.C0) c0r.push_back(round_to_bf16(x));
      EXPECT_TRUE(bits_equal(got, emulate(d, r.A, r.B, c0r, k_tile, 0)));
      // bf16 output adds one bf16 rounding per k-tile: stated tolerance 2e-2.
      EXPECT_LE(rel_fro(got, exact(d, r.A, r.B, r.C0)), 2e-2);
    }
}

TEST(SimNumerics, Bf16InputsAndCommandChunksAndAlphaBeta) {
  GemmDesc d;
  d.M = 65, d.N = 257, d.K = 520, d.trans_b = true, d.dtype_in = DType::BF16;
  d.alpha = 0.5f, d.beta = 1.0f;
  d.lda = 530, d.ldc = 260;  // strided operands
  const Operands r = make_inputs(d, 7);
  // bf16 inputs: the emulation reads the same rounded values.
  Operands rb = r;
  for (auto& x : rb.A) x = round_to_bf16(x);
  for (auto& x : rb.B) x = round_to_bf16(x);
  for (std::int64_t chunk : {std::int64_t(0), std::int64_t(128), std::int64_t(256)}) {
    SCOPED_TRACE(chunk);
    const auto got = simulate(d, r, 32, chunk);
    EXPECT_TRUE(bits_equal(got, emulate(d, rb.A, rb.B, r.C0, 32, chunk)));
    auto ref = exact(d, rb.A, rb.B, r.C0);
    EXPECT_LE(rel_fro(got, ref), 1e-5) << "only fp32 summation order differs from float64 here";
  }
  // Chunked sums differ from one long sum in the last bits: the chunking is real.
  EXPECT_FALSE(bits_equal(simulate(d, r, 32, 0), simulate(d, r, 32, 128)));
}

TEST(SimNumerics, NanPropagatesAndNeverVerifies) {
  GemmDesc d;
  d.M = 9, d.N = 40, d.K = 17;
  Operands r = make_inputs(d, 3);
  r.A[2 * d.K + 5] = std::numeric_limits<float>::quiet_NaN();
  const auto got = simulate(d, r, 32, 0);
  for (std::int64_t j = 0; j < d.N; ++j) EXPECT_TRUE(std::isnan(got[2 * d.N + j])) << j;
  EXPECT_FALSE(std::isnan(got[0]));
  EXPECT_FALSE(rel_fro(got, exact(d, r.A, r.B, r.C0)) <= 1e-2);
  d.dtype_out = DType::BF16;  // the vector bf16 rounding keeps NaN a NaN
  const auto gb = simulate(d, r, 8, 0);
  EXPECT_TRUE(std::isnan(gb[2 * d.N + 3]));
}

TEST(SimNumerics, RejectsBadTiling) {
  GemmDesc d;
  d.M = d.N = d.K = 64;
  std::vector<float> A(64 * 64), B(64 * 64), C(64 * 64);
  EXPECT_THROW(simulate_gemm(d, A.data(), B.data(), C.data(), 0, 0), InputError);
  EXPECT_THROW(simulate_gemm(d, A.data(), B.data(), C.data(), 32, 48), InputError);
  d.M = 0;
  EXPECT_THROW(simulate_gemm(d, A.data(), B.data(), C.data(), 32, 0), InputError);
}

}  // namespace
}  // namespace flopwatt::npu
