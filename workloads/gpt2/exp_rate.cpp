#include "workloads/gpt2/exp_rate.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "workloads/gpt2/fast_math.h"

namespace flopwatt::gpt2 {
namespace {

using Clock = std::chrono::steady_clock;

// One thread's 4 KB row: exponents in [-20, 0), as the cross-entropy's
// (logit - max) log2 e mostly are.
constexpr int kRow = 1024;
// Passes over the row between clock reads: ~10^5 exps, so the clock is free.
constexpr int kPasses = 64;

volatile float g_sink = 0.0f;

// Exps evaluated until `deadline`, summed into *sum so none can be dropped.
std::uint64_t exps_until(const float* row, Clock::time_point deadline, float* sum) {
  std::uint64_t n = 0;
#if defined(__AVX512F__)
  // Four sums, as in the kernels: one chain of dependent adds would bound the loop instead.
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  do {
    for (int p = 0; p < kPasses; ++p)
      for (int i = 0; i < kRow; i += 64)
        for (int k = 0; k < 4; ++k)
          acc[k] = _mm512_add_ps(acc[k], simd::exp2_16(_mm512_loadu_ps(row + i + 16 * k)));
    n += std::uint64_t(kPasses) * kRow;
  } while (Clock::now() < deadline);
  *sum += simd::hsum16(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
#else
  // Without AVX-512 the kernels' exp is exp_fast in an `omp simd` loop; so is this one.
  float s = 0.0f;
  do {
    for (int p = 0; p < kPasses; ++p) {
#pragma omp simd reduction(+ : s)
      for (int i = 0; i < kRow; ++i) s += exp_fast(row[i] * 0.69314718f);
    }
    n += std::uint64_t(kPasses) * kRow;
  } while (Clock::now() < deadline);
  *sum += s;
#endif
  return n;
}

}  // namespace

double measure_exp_rate(int threads, double seconds) {
  if (threads < 1 || !(seconds > 0)) return 0.0;
  constexpr int kRounds = 5;
  const auto round = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds / kRounds));
  double best = 0.0;
  for (int r = 0; r < kRounds; ++r) {
    std::uint64_t total = 0;
    Clock::time_point start, end;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
      alignas(64) float row[kRow];
      for (int i = 0; i < kRow; ++i) row[i] = -20.0f * float((i * 37 + omp_get_thread_num()) % kRow) / kRow;
      float sum = 0.0f;
#pragma omp barrier
#pragma omp single
      start = Clock::now();  // implicit barrier: every thread starts from here
      total = exps_until(row, start + round, &sum);
#pragma omp barrier
#pragma omp single
      end = Clock::now();
#pragma omp critical
      g_sink = g_sink + sum;
    }
    const double s = std::chrono::duration<double>(end - start).count();
    if (s > 0) best = std::max(best, double(total) / s);
  }
  return best;
}

}  // namespace flopwatt::gpt2
