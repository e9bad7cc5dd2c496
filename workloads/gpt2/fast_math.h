// Vectorizable float exp for the softmax, attention and GELU kernels. The libm
// expf/tanhf calls block auto-vectorization (and libmvec needs -ffast-math,
// which would also loosen every other kernel), so the non-GEMM ops use this
// plain-C++ version, which GCC turns into AVX-512 code inside `omp simd` loops.
// Accuracy: within 2 ulp of expf on [-87, 88]; NaN in, NaN out.
#pragma once
#include <bit>
#include <cstdint>

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

}  // namespace flopwatt::gpt2
