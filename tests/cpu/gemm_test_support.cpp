#include "gemm_test_support.h"

#include <cmath>
#include <limits>
#include <random>

#include "cpu/gemm_checks.h"
#include "cpu/reference_gemm.h"
#include "workloads/verify.h"

namespace flopwatt::cpu::testing {
namespace {

std::int64_t stored_rows(bool trans, std::int64_t rows, std::int64_t cols) { return trans ? cols : rows; }

}  // namespace

const void* Operands::A() const { return a16.empty() ? static_cast<const void*>(a32.data()) : a16.data(); }
const void* Operands::B() const { return b16.empty() ? static_cast<const void*>(b32.data()) : b16.data(); }

Operands make_operands(const GemmDesc& d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Operands op;
  const std::size_t na = std::size_t(stored_rows(d.trans_a, d.M, d.K) * d.eff_lda());
  const std::size_t nb = std::size_t(stored_rows(d.trans_b, d.K, d.N) * d.eff_ldb());
  op.a32.resize(na);
  op.b32.resize(nb);
  for (auto& x : op.a32) x = u(rng);
  for (auto& x : op.b32) x = u(rng);
  if (d.dtype_in == DType::BF16) {
    for (float x : op.a32) op.a16.push_back(f32_to_bf16(x));
    for (float x : op.b32) op.b16.push_back(f32_to_bf16(x));
    op.a32.clear();
    op.b32.clear();
  }
  const std::int64_t ldc = d.eff_ldc();
  op.c.assign(std::size_t(d.M * ldc), kPadding);
  for (std::int64_t i = 0; i < d.M; ++i)
    for (std::int64_t j = 0; j < d.N; ++j)
      op.c[i * ldc + j] = d.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : u(rng);
  return op;
}

std::vector<GemmDesc> awkward_cases(DType dtype_in) {
  struct Mnk { std::int64_t M, N, K; };
  const Mnk shapes[] = {{1, 1, 1},   {7, 65, 257}, {65, 7, 1},   {257, 65, 7},
                        {1, 257, 65}, {17, 33, 65}, {64, 48, 96}, {96, 130, 300}};
  struct Ab { float alpha, beta; };
  const Ab scalars[] = {{1.0f, 1.0f}, {-0.75f, 0.5f}, {2.0f, 0.0f}};
  auto make = [&](const Mnk& s, int layout, Ab ab, bool padded) {
    GemmDesc d;
    d.M = s.M, d.N = s.N, d.K = s.K;
    d.trans_a = layout & 2;
    d.trans_b = layout & 1;
    d.dtype_in = dtype_in;
    d.alpha = ab.alpha, d.beta = ab.beta;
    if (padded) {
      d.lda = (d.trans_a ? d.M : d.K) + 3;
      d.ldb = (d.trans_b ? d.K : d.N) + 5;
      d.ldc = d.N + 2;
    }
    return d;
  };
  // Every shape in every layout plainly, plus two variants that rotate through
  // the alpha/beta pairs and padded leading dimensions, so that across the
  // shapes each layout meets every pair both tight and padded without the
  // full cross product (primitive creation makes that slow for oneDNN).
  std::vector<GemmDesc> v;
  for (int si = 0; si < int(std::size(shapes)); ++si)
    for (int layout = 0; layout < 4; ++layout) {
      v.push_back(make(shapes[si], layout, {1.0f, 0.0f}, false));
      const int k = si + layout;
      v.push_back(make(shapes[si], layout, scalars[k % 3], k % 2 == 0));
      v.push_back(make(shapes[si], layout, scalars[(k + 1) % 3], k % 2 == 1));
    }
  return v;
}

CheckResult check_against_reference(Backend& backend, const GemmDesc& d, std::uint64_t seed, bool prepare) {
  const Operands op = make_operands(d, seed);
  std::vector<double> ref(std::size_t(d.M * d.N));
  reference_gemm_f64(d, op.A(), op.B(), op.c.data(), ref.data());
  std::vector<float> got = op.c;
  if (prepare) backend.prepare(d, op.B());
  backend.gemm(d, op.A(), op.B(), got.data());
  CheckResult r;
  const std::int64_t ldc = d.eff_ldc();
  r.rel_error = rel_frobenius_error(got.data(), std::size_t(ldc), ref.data(), std::size_t(d.N), std::size_t(d.M),
                                    std::size_t(d.N));
  for (std::int64_t i = 0; i < d.M; ++i)
    for (std::int64_t j = d.N; j < ldc; ++j)
      if (got[i * ldc + j] != kPadding) r.padding_intact = false;
  return r;
}

std::vector<std::string> check_all(Backend& backend, const std::vector<GemmDesc>& cases, bool prepare,
                                   int* checked) {
  std::vector<std::string> failures;
  int n = 0;
  std::uint64_t seed = 1;
  for (const GemmDesc& d : cases) {
    ++seed;
    if (!backend.supports(d)) continue;
    ++n;
    const CheckResult r = check_against_reference(backend, d, seed, prepare);
    const double tol = gemm_tolerance(d.dtype_in);
    if (!passes(r.rel_error, tol) || !r.padding_intact)
      failures.push_back(describe(d) + ": rel error " + std::to_string(r.rel_error) + " (tolerance " +
                         std::to_string(tol) + ")" + (r.padding_intact ? "" : ", wrote into C's padding"));
  }
  if (checked) *checked = n;
  return failures;
}

bool nan_in_input_is_caught(Backend& backend, const GemmDesc& d) {
  Operands op = make_operands(d, 99);
  // Column 0 of a middle stored row: always read, never padding.
  const std::size_t mid_a = std::size_t(stored_rows(d.trans_a, d.M, d.K) / 2 * d.eff_lda());
  if (d.dtype_in == DType::BF16)
    op.a16[mid_a] = f32_to_bf16(std::numeric_limits<float>::quiet_NaN());
  else
    op.a32[mid_a] = std::numeric_limits<float>::quiet_NaN();
  // The reference is computed on the clean operand, as a harness would verify
  // a corrupted run against a trusted result.
  Operands clean = make_operands(d, 99);
  std::vector<double> ref(std::size_t(d.M * d.N));
  reference_gemm_f64(d, clean.A(), clean.B(), clean.c.data(), ref.data());
  std::vector<float> got = op.c;
  backend.gemm(d, op.A(), op.B(), got.data());
  const double err = rel_frobenius_error(got.data(), std::size_t(d.eff_ldc()), ref.data(), std::size_t(d.N),
                                         std::size_t(d.M), std::size_t(d.N));
  return !passes(err, gemm_tolerance(d.dtype_in));
}

}  // namespace flopwatt::cpu::testing
