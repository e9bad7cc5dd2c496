#include "workloads/gpt2/exp_rate.h"

#include <array>
#include <cstdint>

#include "workloads/gpt2/fast_math.h"

namespace flopwatt::gpt2 {
namespace {

// The row: 4 KB of exponents in [-20, 0), as the cross-entropy's
// (logit - max) log2 e mostly are. Read only, so every thread shares it.
constexpr int kRow = 1024;
// Passes over the row between clock reads: 64 K exps, so the clock is free.
constexpr int kPasses = 64;

const std::array<float, kRow>& row() {
  static const std::array<float, kRow> r = [] {
    std::array<float, kRow> a{};
    for (int i = 0; i < kRow; ++i) a[i] = -20.0f * float((i * 37) % kRow) / kRow;
    return a;
  }();
  return r;
}

thread_local volatile float t_sink = 0.0f;

}  // namespace

double exps_until(std::chrono::steady_clock::time_point deadline) {
  const float* x = row().data();
  std::uint64_t n = 0;
#if defined(__AVX512F__)
  // Four sums, as in the kernels: one chain of dependent adds would bound the loop instead.
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  do {
    for (int p = 0; p < kPasses; ++p)
      for (int i = 0; i < kRow; i += 64)
        for (int k = 0; k < 4; ++k) acc[k] = _mm512_add_ps(acc[k], simd::exp2_16(_mm512_loadu_ps(x + i + 16 * k)));
    n += std::uint64_t(kPasses) * kRow;
  } while (std::chrono::steady_clock::now() < deadline);
  t_sink = t_sink + simd::hsum16(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
#else
  // Without AVX-512 the kernels' exp is exp_fast in an `omp simd` loop; so is this one.
  float s = 0.0f;
  do {
    for (int p = 0; p < kPasses; ++p) {
#pragma omp simd reduction(+ : s)
      for (int i = 0; i < kRow; ++i) s += exp_fast(x[i] * 0.69314718f);
    }
    n += std::uint64_t(kPasses) * kRow;
  } while (std::chrono::steady_clock::now() < deadline);
  t_sink = t_sink + s;
#endif
  return double(n);
}

}  // namespace flopwatt::gpt2
