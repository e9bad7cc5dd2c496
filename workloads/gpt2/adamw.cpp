#include "workloads/gpt2/adamw.h"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace flopwatt::gpt2 {

namespace {

// The update rewritten so that no division depends on the step: with
//   step = lr / bc1, s2 = 1 / sqrt(bc2), decay = 1 - lr wd
// p -= lr (m / bc1 / (sqrt(v / bc2) + eps) + wd p) is p decay - step m / (sqrt(v) s2 + eps).
// The loop as first written divided three times per element (by bc1, by bc2
// and by the denominator); the pass is meant to be bound by its 28 (or 30)
// bytes per parameter, so the per-element arithmetic is kept to one sqrt.
struct Coeffs {
  float b1, c1, b2, c2, step, s2, eps, decay;
};

Coeffs coeffs(const AdamWConfig& c, int t) {
  const double bc1 = 1.0 - std::pow(double(c.beta1), t), bc2 = 1.0 - std::pow(double(c.beta2), t);
  return {c.beta1,
          1.0f - c.beta1,
          c.beta2,
          1.0f - c.beta2,
          static_cast<float>(double(c.lr) / bc1),
          static_cast<float>(1.0 / std::sqrt(bc2)),
          c.eps,
          static_cast<float>(1.0 - double(c.lr) * c.weight_decay)};
}

// f32_to_bf16's rounding (nearest even, NaN kept quiet) written branch-free so it vectorizes.
inline bf16_t to_bf16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  return static_cast<bf16_t>(nan ? ((u >> 16) | 0x40u) : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// Elements [i0, i1) without intrinsics: the whole update where AVX-512 is
// missing, and the unaligned head and the tail where it is not.
void update_portable(float* p, const float* g, float* m, float* v, bf16_t* shadow, std::int64_t i0,
                     std::int64_t i1, const Coeffs& k) {
  if (shadow) {
#pragma omp simd
    for (std::int64_t i = i0; i < i1; ++i) {
      const float gi = g[i];
      const float mi = k.b1 * m[i] + k.c1 * gi;
      const float vi = k.b2 * v[i] + k.c2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      const float pi = p[i] * k.decay - k.step * mi / (std::sqrt(vi) * k.s2 + k.eps);
      p[i] = pi;
      shadow[i] = to_bf16(pi);
    }
  } else {
#pragma omp simd
    for (std::int64_t i = i0; i < i1; ++i) {
      const float gi = g[i];
      const float mi = k.b1 * m[i] + k.c1 * gi;
      const float vi = k.b2 * v[i] + k.c2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      p[i] = p[i] * k.decay - k.step * mi / (std::sqrt(vi) * k.s2 + k.eps);
    }
  }
}

#if defined(__AVX512F__)

// The unmasked forms of sqrt, rcp14, the narrowing move and the shifts pass
// _mm512_undefined_*() as their merge operand, which GCC 12 reports as
// maybe-uninitialized (an error under -Werror); the all-lanes zero-masked forms
// and GCC's vector operators compile to the same instructions without it.
constexpr __mmask16 kAll = 0xffff;

// 16 elements from i; p + i is 64-byte aligned. The reciprocal is rcp14 and one
// Newton step (relative error below 2^-22 before rounding, against 2^-24 for
// the division it replaces); the update it scales is lr-sized, so p moves by
// at most a few ulp of lr from the exact update.
template <bool kShadow, bool kStream>
inline void update16(float* p, const float* g, float* m, float* v, bf16_t* shadow, std::int64_t i,
                     const Coeffs& k) {
  const __m512 gi = _mm512_loadu_ps(g + i);
  const __m512 mi = _mm512_fmadd_ps(_mm512_set1_ps(k.b1), _mm512_loadu_ps(m + i), _mm512_mul_ps(_mm512_set1_ps(k.c1), gi));
  const __m512 vi = _mm512_fmadd_ps(_mm512_set1_ps(k.b2), _mm512_loadu_ps(v + i),
                                    _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(k.c2), gi), gi));
  _mm512_storeu_ps(m + i, mi);
  _mm512_storeu_ps(v + i, vi);
  const __m512 den = _mm512_fmadd_ps(_mm512_maskz_sqrt_ps(kAll, vi), _mm512_set1_ps(k.s2), _mm512_set1_ps(k.eps));
  __m512 r = _mm512_maskz_rcp14_ps(kAll, den);
  r = _mm512_fmadd_ps(_mm512_fnmadd_ps(den, r, _mm512_set1_ps(1.0f)), r, r);
  const __m512 pi = _mm512_fnmadd_ps(_mm512_mul_ps(_mm512_set1_ps(k.step), mi), r,
                                     _mm512_mul_ps(_mm512_load_ps(p + i), _mm512_set1_ps(k.decay)));
  _mm512_store_ps(p + i, pi);
  if constexpr (kShadow) {
    using u32x16 = std::uint32_t __attribute__((vector_size(64)));
    const u32x16 u = reinterpret_cast<u32x16>(pi);
    const u32x16 hi = u >> 16;
    const u32x16 rounded = (u + 0x7fffu + (hi & 1u)) >> 16;
    const u32x16 b = (u & 0x7fffffffu) > 0x7f800000u ? (hi | 0x40u) : rounded;
    const __m256i h = _mm512_maskz_cvtepi32_epi16(kAll, reinterpret_cast<__m512i>(b));
    // The shadow is only written here and read by the next forward's GEMMs,
    // long after it left the cache: a streaming store skips reading each line
    // in first, so the bf16 pass moves 2 bytes more per parameter, not 4.
    if constexpr (kStream) _mm256_stream_si256(reinterpret_cast<__m256i*>(shadow + i), h);
    else _mm256_storeu_si256(reinterpret_cast<__m256i*>(shadow + i), h);
  }
}

template <bool kShadow, bool kStream>
void update_avx512(float* p, const float* g, float* m, float* v, bf16_t* shadow, std::int64_t i0, std::int64_t i1,
                   const Coeffs& k) {
  for (std::int64_t i = i0; i < i1; i += 16) update16<kShadow, kStream>(p, g, m, v, shadow, i, k);
}

#endif

}  // namespace

void adamw_update(float* p, const float* g, float* m, float* v, bf16_t* shadow, std::int64_t n,
                  const AdamWConfig& c, int t) {
  const Coeffs k = coeffs(c, t);
#if defined(__AVX512F__)
  // Vector blocks start where p is 64-byte aligned; each thread takes one
  // contiguous run of blocks, the head and tail go through the portable loop.
  const std::int64_t head =
      std::min<std::int64_t>(n, (64 - reinterpret_cast<std::uintptr_t>(p) % 64) % 64 / sizeof(float));
  const std::int64_t blocks = (n - head) / 16;
  const bool stream = shadow && reinterpret_cast<std::uintptr_t>(shadow + head) % 32 == 0;
  update_portable(p, g, m, v, shadow, 0, head, k);
  update_portable(p, g, m, v, shadow, head + blocks * 16, n, k);
#pragma omp parallel if (blocks >= 1024)
  {
    const int nt = omp_get_num_threads(), tid = omp_get_thread_num();
    const std::int64_t b0 = blocks * tid / nt, b1 = blocks * (tid + 1) / nt;
    const std::int64_t i0 = head + b0 * 16, i1 = head + b1 * 16;
    if (!shadow) update_avx512<false, false>(p, g, m, v, nullptr, i0, i1, k);
    else if (stream) update_avx512<true, true>(p, g, m, v, shadow, i0, i1, k);
    else update_avx512<true, false>(p, g, m, v, shadow, i0, i1, k);
    // Streaming stores are weakly ordered: fence before another thread reads.
    if (stream) _mm_sfence();
  }
#else
#pragma omp parallel if (n >= (1 << 14))
  {
    const int nt = omp_get_num_threads(), tid = omp_get_thread_num();
    // Slices start on 16-element boundaries so no two threads share a cache line.
    const std::int64_t blocks = (n + 15) / 16;
    const std::int64_t i0 = std::min(n, blocks * tid / nt * 16), i1 = std::min(n, blocks * (tid + 1) / nt * 16);
    update_portable(p, g, m, v, shadow, i0, i1, k);
  }
#endif
}

void adamw_update_reference(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamWConfig& c,
                            int t) {
  const double bc1 = 1.0 - std::pow(double(c.beta1), t), bc2 = 1.0 - std::pow(double(c.beta2), t);
  for (std::int64_t i = 0; i < n; ++i) {
    const double mi = double(c.beta1) * m[i] + (1.0 - double(c.beta1)) * g[i];
    const double vi = double(c.beta2) * v[i] + (1.0 - double(c.beta2)) * double(g[i]) * g[i];
    m[i] = static_cast<float>(mi);
    v[i] = static_cast<float>(vi);
    p[i] = static_cast<float>(p[i] - double(c.lr) * ((mi / bc1) / (std::sqrt(vi / bc2) + c.eps) + c.weight_decay * double(p[i])));
  }
}

}  // namespace flopwatt::gpt2
