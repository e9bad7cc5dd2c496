// Vectorizable float exp for the softmax, attention and GELU kernels. The libm
// expf/tanhf calls block auto-vectorization (and libmvec needs -ffast-math,
// which would also loosen every other kernel), so the non-GEMM ops use this
// plain-C++ version, which GCC turns into AVX-512 code inside `omp simd` loops.
// Accuracy: within 2 ulp of expf on [-87, 88]; NaN in, NaN out.
#pragma once
#include <bit>
#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace flopwatt::gpt2 {

inline float exp_fast(float x) {
  // e^88 is below FLT_MAX and 2^-126 is the smallest normal: clamping keeps the
  // exponent arithmetic in range. Comparisons written so NaN passes through.
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.0f ? 88.0f : x;
  // x = n ln2 + r, |r| <= ln2/2; the 1.5*2^23 trick rounds to nearest.
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693145751953125f;  // ln2 split in two so n*ln2_hi is exact
  r = r - n * 1.42860682030941723e-6f;
  // Taylor to degree 7: truncation error < 5e-9 relative on |r| <= 0.347.
  float p = 1.98412698e-4f;
  p = p * r + 1.38888889e-3f;
  p = p * r + 8.33333333e-3f;
  p = p * r + 4.16666667e-2f;
  p = p * r + 1.66666667e-1f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const std::uint32_t bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(n) + 127) << 23;
  return p * std::bit_cast<float>(bits);
}

// The logistic function 1 / (1 + e^-x), saturating cleanly at both ends.
inline float sigmoid_fast(float x) { return 1.0f / (1.0f + exp_fast(-x)); }

#if defined(__AVX512F__)

// The same functions on 16 lanes, for the loops whose throughput is their exp:
// the softmax rows, the cross-entropy sums, GELU. GCC compiles exp_fast's
// clamps in an `omp simd` loop as masks and blends, and its 2^n as a convert,
// add and shift; here the clamps are two min/max and 2^n one vscalefps.
// The 1 / (1 + e) of the sigmoid is rcp14 and a Newton step instead of a
// divide, which on Zen 4 issues once per several cycles for 512 bits.
// Every intrinsic with a merge operand is used in its all-lanes zero-masked
// form: the plain forms pass _mm512_undefined_ps(), which GCC 12 reports as
// maybe-uninitialized under -Werror.
namespace simd {

constexpr __mmask16 kAll = 0xffff;

inline __m512 exp16(__m512 x) {
  // vmaxps/vminps return their second operand when either is NaN: x is second.
  x = _mm512_maskz_max_ps(kAll, _mm512_set1_ps(-87.3f), x);
  x = _mm512_maskz_min_ps(kAll, _mm512_set1_ps(88.0f), x);
  const __m512 n = _mm512_maskz_roundscale_ps(kAll, _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723e-6f), r);
  __m512 p = _mm512_set1_ps(1.98412698e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.38888889e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.33333333e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.16666667e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.66666667e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(kAll, p, n);
}

// 2^t for t <= 0 (small positive t too; NaN stays NaN, -inf gives ~2^-125.5),
// within 3e-7 relative. The cross-entropy's exps are of (logit - max) log2(e):
// that product's rounding grows with |t|, so it is largest on the terms that
// add least to the sum. The cross-entropy forward is bound by these vector
// ops, not by DRAM, so against exp16 this skips the upper clamp and the
// two-constant ln 2 reduction (2^t = 2^n 2^f, f = t - n exact) and fits 2^f on
// [-1/2, 1/2] with degree 5 rather than 7: 1 + f q(f), q a Chebyshev fit of
// (2^f - 1) / f, max relative error 2.0e-7 with these float coefficients.
// The constant term is exactly 1 so that 2^0 = 1: a row of one logit gets
// softmax 1 and gradient 0 exactly, as the reference does.
inline __m512 exp2_16(__m512 t) {
  // -125.5, not -126 or below: n >= -126 and 2^f >= 2^-1/2 keep the result a
  // normal float (denormal operands slow the sums that consume it).
  t = _mm512_maskz_max_ps(kAll, _mm512_set1_ps(-125.5f), t);
  const __m512 n = _mm512_maskz_roundscale_ps(kAll, t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(1.338130212e-3f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.666368365e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550381169e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.402234972e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931471825e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(kAll, p, n);
}

// 1 / d for d >= 1 (finite): rcp14 then one Newton step, within 2 ulp.
inline __m512 reciprocal16(__m512 d) {
  const __m512 r = _mm512_maskz_rcp14_ps(kAll, d);
  return _mm512_fmadd_ps(_mm512_fnmadd_ps(d, r, _mm512_set1_ps(1.0f)), r, r);
}

// sigmoid(z) given t = -z log2(e), i.e. 1 / (1 + 2^t): for callers that fold
// -log2(e) into the constants producing z (GELU's 2u), so the exp is
// exp2_16's 9 ops rather than exp16's 13 and a negation. t is clamped at 126
// so that 1 + 2^t stays finite and the Newton step never meets 0 * inf.
inline __m512 sigmoid_exp2_16(__m512 t) {
  const __m512 e = exp2_16(_mm512_maskz_min_ps(kAll, _mm512_set1_ps(126.0f), t));
  return reciprocal16(_mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

// Horizontal sum as a tree of four shuffles and adds, with the masked
// (zeroing) shuffles: _mm512_reduce_add_ps and even _mm512_castps512_ps256
// extract with an undefined merge operand (see above). Summing the 16 lanes in
// one scalar chain through memory cost about 64 cycles of latency, and
// LayerNorm waits on two such sums in every row.
inline float hsum16(__m512 v) {
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(kAll, v, v, 0x4E));  // 256-bit halves swapped
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(kAll, v, v, 0xB1));  // 128-bit neighbours swapped
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(kAll, v, 0x4E));        // 64-bit pairs swapped
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(kAll, v, 0xB1));        // neighbours swapped
  return _mm512_cvtss_f32(v);
}
// Horizontal max through memory, once per row or chunk.
// A NaN lane may or may not win; callers carry NaN through their exp pass instead.
inline float hmax16(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  float m = t[0];
  for (int i = 1; i < 16; ++i) m = t[i] > m ? t[i] : m;
  return m;
}

}  // namespace simd

#endif

}  // namespace flopwatt::gpt2
