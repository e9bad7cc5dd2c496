// Fast non-GEMM kernels. Work is split across OpenMP threads by rows (or by
// (batch, head) for attention, or by column blocks where rows would race), and
// the innermost loops are written so GCC vectorizes them (`omp simd`, exp_fast
// instead of libm). Contracts are in kernels.h; kernels_reference.cpp is the spec.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cmath>
#include <vector>

#include "workloads/gpt2/fast_math.h"
#include "workloads/gpt2/kernels.h"

namespace flopwatt::gpt2::kernels {

namespace {

constexpr float kGeluK = 0.7978845608028654f;  // sqrt(2/pi)
// Columns per task for column-partitioned reductions. 128 rather than 256:
// GPT-2's C = 768 and 3C = 2304 made 3 and 9 tasks of 256, so one of two
// threads did twice the other's share (6 and 18 tasks of 128 split evenly).
constexpr int kColBlock = 128;

// Below this many elements a parallel region costs more than it saves.
constexpr std::int64_t kParallelMin = 1 << 14;

// Per-thread scratch that grows and is reused across calls.
std::vector<float>& thread_scratch(int slot) {
  thread_local std::vector<float> s[4];
  return s[slot];
}

}  // namespace

void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) {
  const int N = B * T;
#pragma omp parallel for schedule(static) if (std::int64_t(N) * C >= kParallelMin)
  for (int n = 0; n < N; ++n) {
    float* o = out + std::int64_t(n) * C;
    const float* e = wte + std::int64_t(inp[n]) * C;
    const float* p = wpe + std::int64_t(n % T) * C;
#pragma omp simd
    for (int i = 0; i < C; ++i) o[i] = e[i] + p[i];
  }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C) {
  // A token may repeat within the batch, so rows would race on dwte: split columns.
  const int N = B * T;
  const int blocks = (C + kColBlock - 1) / kColBlock;
  // In the training step dwte is the 154 MB gradient the lm_head backward has
  // just written, so each token's row comes from DRAM, at a row nobody could
  // predict, and the loop waited out one DRAM latency per row. The rows
  // kPrefetchRows tokens ahead are asked for in advance, for writing, so those
  // latencies overlap: at d12 with B x T = 256 on 2 threads, 0.140-0.146 ms a
  // step became 0.096-0.103 ms where the two cores sat far apart (no change
  // where they sat close: 0.085), and none of seven runs took 0.34 or 0.97 ms
  // as two of twelve without it did.
  constexpr int kPrefetchRows = 8;
  constexpr int kLineFloats = 64 / sizeof(float);
#pragma omp parallel for schedule(static) if (std::int64_t(N) * C >= kParallelMin)
  for (int cb = 0; cb < blocks; ++cb) {
    const int c0 = cb * kColBlock, c1 = std::min(C, c0 + kColBlock);
    for (int n = 0; n < std::min(N, kPrefetchRows); ++n)
      for (int i = c0; i < c1; i += kLineFloats) __builtin_prefetch(dwte + std::int64_t(inp[n]) * C + i, 1, 3);
    for (int n = 0; n < N; ++n) {
      if (n + kPrefetchRows < N)
        for (int i = c0; i < c1; i += kLineFloats)
          __builtin_prefetch(dwte + std::int64_t(inp[n + kPrefetchRows]) * C + i, 1, 3);
      const float* d = dout + std::int64_t(n) * C;
      float* e = dwte + std::int64_t(inp[n]) * C;
      float* p = dwpe + std::int64_t(n % T) * C;
#pragma omp simd
      for (int i = c0; i < c1; ++i) {
        e[i] += d[i];
        p[i] += d[i];
      }
    }
  }
}

#if defined(__AVX512F__)
// Lanes [i, min(i + 16, n)) of an n-element array: the masked tail needs no scalar loop.
inline __mmask16 lanes(std::int64_t i, std::int64_t n) {
  return n - i >= 16 ? simd::kAll : static_cast<__mmask16>((1u << (n - i)) - 1);
}

// The sum of (x[i] - c)^2 (square) or of x[i] - c over a row, in four chains:
// `omp simd reduction` kept one vector accumulator, so each pass waited on the
// add latency of every vector in turn (a row of 768 took 48 dependent adds).
template <bool kSquare>
inline float row_sum(const float* x, int C, float c) {
  const __m512 cv = _mm512_set1_ps(c);
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  auto term = [&](__m512 v, __m512 acc) {
    const __m512 d = _mm512_sub_ps(v, cv);
    return kSquare ? _mm512_fmadd_ps(d, d, acc) : _mm512_add_ps(acc, d);
  };
  int i = 0;
  for (; i + 64 <= C; i += 64) {
    s0 = term(_mm512_loadu_ps(x + i), s0);
    s1 = term(_mm512_loadu_ps(x + i + 16), s1);
    s2 = term(_mm512_loadu_ps(x + i + 32), s2);
    s3 = term(_mm512_loadu_ps(x + i + 48), s3);
  }
  for (; i < C; i += 16) {
    const __mmask16 k = lanes(i, C);
    // Masked-off lanes load 0 and would add (0 - c)^2: keep the sum's lane instead.
    s0 = _mm512_mask_mov_ps(s0, k, term(_mm512_maskz_loadu_ps(k, x + i), s0));
  }
  return simd::hsum16(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}
#endif

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                       int N, int C) {
#pragma omp parallel for schedule(static) if (std::int64_t(N) * C >= kParallelMin)
  for (int n = 0; n < N; ++n) {
    const float* x = inp + std::int64_t(n) * C;
    float* o = out + std::int64_t(n) * C;
#if defined(__AVX512F__)
    const float m = row_sum<false>(x, C, 0.0f) / C;
    const float r = 1.0f / std::sqrt(row_sum<true>(x, C, m) / C + 1e-5f);
    const __m512 mv = _mm512_set1_ps(m), rv = _mm512_set1_ps(r);
    for (int i = 0; i < C; i += 16) {
      const __mmask16 k = lanes(i, C);
      const __m512 norm = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), mv), rv);
      _mm512_mask_storeu_ps(o + i, k,
                            _mm512_fmadd_ps(norm, _mm512_maskz_loadu_ps(k, w + i), _mm512_maskz_loadu_ps(k, b + i)));
    }
#else
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < C; ++i) s += x[i];
    const float m = s / C;
    float v = 0.0f;
#pragma omp simd reduction(+ : v)
    for (int i = 0; i < C; ++i) {
      const float d = x[i] - m;
      v += d * d;
    }
    const float r = 1.0f / std::sqrt(v / C + 1e-5f);
#pragma omp simd
    for (int i = 0; i < C; ++i) o[i] = (x[i] - m) * r * w[i] + b[i];
#endif
    mean[n] = m;
    rstd[n] = r;
  }
}


// Rows [n0, n1) of layernorm_backward: dx of each row, and the row's terms of
// dw and db added into this thread's partial sums pdw, pdb.
template <bool kAccumulate>
void layernorm_backward_rows(float* dinp, float* pdw, float* pdb, const float* dout, const float* inp,
                             const float* w, const float* mean, const float* rstd, int n0, int n1, int C) {
  for (int n = n0; n < n1; ++n) {
    const float* dy = dout + std::int64_t(n) * C;
    const float* x = inp + std::int64_t(n) * C;
    float* dx = dinp + std::int64_t(n) * C;
    const float m = mean[n], r = rstd[n];
#if defined(__AVX512F__)
    // GCC's `omp simd` version of these loops reloaded dy and w after every
    // store (it cannot tell pdw, pdb and dx from them) and summed into one
    // chain; here each value is loaded once and the sums run as two chains.
    const __m512 mv = _mm512_set1_ps(m), rv = _mm512_set1_ps(r);
    __m512 s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), t1 = s1, t2 = s1;
    int i = 0;
    for (; i + 32 <= C; i += 32) {
      const __m512 d0 = _mm512_mul_ps(_mm512_maskz_loadu_ps(simd::kAll, w + i), _mm512_maskz_loadu_ps(simd::kAll, dy + i));
      const __m512 d1 =
          _mm512_mul_ps(_mm512_maskz_loadu_ps(simd::kAll, w + i + 16), _mm512_maskz_loadu_ps(simd::kAll, dy + i + 16));
      const __m512 x0 = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(simd::kAll, x + i), mv), rv);
      const __m512 x1 = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(simd::kAll, x + i + 16), mv), rv);
      s1 = _mm512_add_ps(s1, d0);
      t1 = _mm512_add_ps(t1, d1);
      s2 = _mm512_fmadd_ps(d0, x0, s2);
      t2 = _mm512_fmadd_ps(d1, x1, t2);
    }
    for (; i < C; i += 16) {
      const __mmask16 k = lanes(i, C);
      const __m512 d0 = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, w + i), _mm512_maskz_loadu_ps(k, dy + i));
      s1 = _mm512_add_ps(s1, d0);
      s2 = _mm512_fmadd_ps(d0, _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), mv), rv), s2);
    }
    const __m512 a = _mm512_set1_ps(simd::hsum16(_mm512_add_ps(s1, t1)) / C);
    const __m512 b = _mm512_set1_ps(simd::hsum16(_mm512_add_ps(s2, t2)) / C);
    // No software prefetch of the next rows' x: it helped when x alone was
    // cold, but in the training step (where dy and dx may not be cached
    // either) it measured slower than the hardware prefetcher alone.
    for (i = 0; i < C; i += 16) {
      const __mmask16 k = lanes(i, C);
      const __m512 d = _mm512_maskz_loadu_ps(k, dy + i);
      const __m512 norm = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), mv), rv);
      _mm512_mask_storeu_ps(pdb + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, pdb + i), d));
      _mm512_mask_storeu_ps(pdw + i, k, _mm512_fmadd_ps(norm, d, _mm512_maskz_loadu_ps(k, pdw + i)));
      // (w dy - a - norm b) r, the order of the reference's terms
      const __m512 g = _mm512_fnmadd_ps(norm, b, _mm512_fmsub_ps(_mm512_maskz_loadu_ps(k, w + i), d, a));
      _mm512_mask_storeu_ps(dx + i, k,
                            kAccumulate ? _mm512_fmadd_ps(g, rv, _mm512_maskz_loadu_ps(k, dx + i)) : _mm512_mul_ps(g, rv));
    }
#else
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
    for (int i = 0; i < C; ++i) {
      const float norm = (x[i] - m) * r;
      const float dnorm = w[i] * dy[i];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
#pragma omp simd
    for (int i = 0; i < C; ++i) {
      const float norm = (x[i] - m) * r;
      pdb[i] += dy[i];
      pdw[i] += norm * dy[i];
      const float g = (w[i] * dy[i] - dnorm_mean - norm * dnorm_norm_mean) * r;
      dx[i] = kAccumulate ? dx[i] + g : g;
    }
#endif
  }
}

void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd, int N, int C, bool accumulate_dinp) {
  // Rows are independent for dx; dw and db sum over rows, so each thread keeps
  // partial sums and the last thread to finish its rows adds them all up. An
  // `omp for` over columns for that sum cost a second barrier per call, and on
  // a shared machine every barrier can wait out a descheduled thread.
  const int max_threads = std::int64_t(N) * C >= kParallelMin ? omp_get_max_threads() : 1;
  // Each thread's partials start on a cache line of their own: a line holding
  // one thread's last db and the next thread's first dw was written by both
  // threads on every row, and its trips between the cores cost 15% of the
  // kernel's time on 2 threads (256 x 768, data in cache).
  constexpr std::size_t kLine = 64 / sizeof(float);
  const std::size_t stride = (std::size_t(2) * C + kLine - 1) / kLine * kLine;
  std::vector<float>& scratch = thread_scratch(0);
  scratch.assign(std::size_t(max_threads) * stride + kLine, 0.0f);
  float* const part =
      scratch.data() + (kLine - reinterpret_cast<std::uintptr_t>(scratch.data()) / sizeof(float) % kLine) % kLine;
  std::atomic<int> finished{0};
#pragma omp parallel num_threads(max_threads)
  {
    // Every thread reads the team size itself: an `omp single` to publish it
    // cost a barrier per call, and this kernel runs 25 times a step.
    const int tid = omp_get_thread_num(), used = omp_get_num_threads();
    float* pdw = part + std::size_t(tid) * stride;
    float* pdb = pdw + C;
    const int n0 = int(std::int64_t(N) * tid / used), n1 = int(std::int64_t(N) * (tid + 1) / used);
    if (accumulate_dinp)
      layernorm_backward_rows<true>(dinp, pdw, pdb, dout, inp, w, mean, rstd, n0, n1, C);
    else
      layernorm_backward_rows<false>(dinp, pdw, pdb, dout, inp, w, mean, rstd, n0, n1, C);
    // acq_rel: the last thread's acquire sees every partial the others released.
    if (finished.fetch_add(1, std::memory_order_acq_rel) == used - 1) {
      for (int t = 1; t < used; ++t) {
        const float* q = part + std::size_t(t) * stride;
        float* p0 = part;
#pragma omp simd
        for (int i = 0; i < 2 * C; ++i) p0[i] += q[i];
      }
      const float* p0 = part;
#pragma omp simd
      for (int i = 0; i < C; ++i) {
        dw[i] += p0[i];
        db[i] += p0[C + i];
      }
    }
  }
}

void bias_forward(float* out, const float* bias, int N, int OC) {
#pragma omp parallel for schedule(static) if (std::int64_t(N) * OC >= kParallelMin)
  for (int n = 0; n < N; ++n) {
    float* o = out + std::int64_t(n) * OC;
#pragma omp simd
    for (int i = 0; i < OC; ++i) o[i] += bias[i];
  }
}

void bias_backward(float* dbias, const float* dout, int N, int OC) {
  const int blocks = (OC + kColBlock - 1) / kColBlock;
#pragma omp parallel for schedule(static) if (std::int64_t(N) * OC >= kParallelMin)
  for (int cb = 0; cb < blocks; ++cb) {
    const int c0 = cb * kColBlock, w = std::min(OC, c0 + kColBlock) - c0;
    float acc[kColBlock] = {};
    for (int n = 0; n < N; ++n) {
      const float* d = dout + std::int64_t(n) * OC + c0;
#pragma omp simd
      for (int i = 0; i < w; ++i) acc[i] += d[i];
    }
#pragma omp simd
    for (int i = 0; i < w; ++i) dbias[c0 + i] += acc[i];
  }
}

#if defined(__AVX512F__)
// sigmoid(2u) of GELU, 2u = x (2k + 2k 0.044715 x^2), given x and x^2: the
// argument in two multiplier-pipe ops, not five, already times -log2(e) for
// sigmoid_exp2_16. Forward and backward both start from it.
inline __m512 gelu_s(__m512 x, __m512 xx) {
  constexpr float c = -2.0f * kGeluK * 1.44269504088896341f;
  return simd::sigmoid_exp2_16(
      _mm512_mul_ps(x, _mm512_fmadd_ps(_mm512_set1_ps(c * 0.044715f), xx, _mm512_set1_ps(c))));
}
#endif

// gelu(x) = 0.5 x (1 + tanh u) = x * sigmoid(2u), u = k (x + 0.044715 x^3):
// the sigmoid form needs one exp and no cancellation near 1 + tanh u = 0.
void gelu_forward(float* out, const float* inp, std::int64_t n) {
#if defined(__AVX512F__)
  const std::int64_t blocks = (n + 15) / 16;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t i = b * 16;
    const __mmask16 m = lanes(i, n);
    const __m512 x = _mm512_maskz_loadu_ps(m, inp + i);
    const __m512 xx = _mm512_mul_ps(x, x);
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(x, gelu_s(x, xx)));
  }
#else
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = inp[i];
    const float u = kGeluK * (x + 0.044715f * x * x * x);
    out[i] = x * sigmoid_fast(2.0f * u);
  }
#endif
}

// With s = sigmoid(2u): 0.5 (1 + tanh u) = s and sech^2 u = 4 s (1 - s), so
// gelu'(x) = s + 2 x s (1 - s) k (1 + 3 * 0.044715 x^2).
void gelu_backward_inplace(float* d, const float* inp, std::int64_t n) {
#if defined(__AVX512F__)
  const std::int64_t blocks = (n + 15) / 16;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t i = b * 16;
    const __mmask16 m = lanes(i, n);
    const __m512 x = _mm512_maskz_loadu_ps(m, inp + i);
    const __m512 xx = _mm512_mul_ps(x, x);
    const __m512 s = gelu_s(x, xx);
    // gelu' = s + s (1 - s) x (2k + 2k 0.134145 x^2) = s + s w, w = t - s t: the
    // loop is bound by the FMA pipes (exp and reciprocal included), so the
    // derivative is folded into four of their ops rather than seven.
    const __m512 t = _mm512_mul_ps(x, _mm512_fmadd_ps(_mm512_set1_ps(2.0f * kGeluK * 0.134145f), xx,
                                                      _mm512_set1_ps(2.0f * kGeluK)));
    const __m512 w = _mm512_fnmadd_ps(s, t, t);
    const __m512 g = _mm512_fmadd_ps(s, w, s);
    _mm512_mask_storeu_ps(d + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, d + i), g));
  }
#else
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = inp[i];
    const float u = kGeluK * (x + 0.044715f * x * x * x);
    const float s = sigmoid_fast(2.0f * u);
    const float g = s + 2.0f * x * s * (1.0f - s) * kGeluK * (1.0f + 0.134145f * x * x);
    d[i] *= g;
  }
#endif
}

// One memset over all of them would leave the second core idle: wpe's gradient
// alone is 3 MB of the 3.6 MB at d12. The floats are cut into equal shares,
// one per thread, whatever span each share starts or ends in.
void zero_spans(const FloatSpan* spans, int count) {
  std::int64_t total = 0;
  for (int i = 0; i < count; ++i) total += spans[i].n;
#pragma omp parallel if (total >= kParallelMin)
  {
    const std::int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const std::int64_t lo = total * t / nt, hi = total * (t + 1) / nt;
    std::int64_t start = 0;  // of span i in the concatenation
    for (int i = 0; i < count && start < hi; start += spans[i].n, ++i) {
      const std::int64_t a = std::max(lo, start), b = std::min(hi, start + spans[i].n);
      if (a < b) std::fill(spans[i].data + (a - start), spans[i].data + (b - start), 0.0f);
    }
  }
}

void residual_forward(float* out, const float* a, const float* b, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

// A row of logits (V = 50257 floats, 200 KB) does not stay in L1 or L2 between
// a max pass and an exp-sum pass, and the (N, Vp) block is larger than L3, so
// two passes read it from DRAM twice. Chunks of kXentChunk floats are read once
// from memory: their max is taken, the running sum rescaled when the max grows
// (once per chunk, not per element), and their exps summed while still in L1.
constexpr int kXentChunk = 2048;
constexpr float kLog2e = 1.44269504088896341f;

// sum over i < n of exp(x[i] - shift). The next chunk (8 KB from x + n on)
// is prefetched meanwhile: the exps are the slow part, and without it the
// max pass of every chunk waited on DRAM while this loop left memory idle.
// Past the last row the prefetches fall off the array, which is harmless.
// The exponent x log2e - shift log2e is one FMA, where (x - shift) log2e was a
// subtract and a multiply: one of the loop's ~13 vector ops per 16 exps. At d12
// that made the op 5-9% faster alone, and exp_scale's backward 4-7%.
inline float exp_sum(const float* x, int n, float shift) {
#if defined(__AVX512F__)
  const __m512 sh = _mm512_set1_ps(shift * kLog2e), l2e = _mm512_set1_ps(kLog2e);
  const float* next = x + kXentChunk;
  // Two sums: one chain of dependent adds would leave the exps' independent
  // work waiting on it.
  __m512 acc = _mm512_setzero_ps(), acc2 = acc;
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    _mm_prefetch(reinterpret_cast<const char*>(next + i), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(next + i + 16), _MM_HINT_T0);
    const __m512 a = _mm512_maskz_loadu_ps(simd::kAll, x + i), b = _mm512_maskz_loadu_ps(simd::kAll, x + i + 16);
    acc = _mm512_add_ps(acc, simd::exp2_16(_mm512_fmsub_ps(a, l2e, sh)));
    acc2 = _mm512_add_ps(acc2, simd::exp2_16(_mm512_fmsub_ps(b, l2e, sh)));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = lanes(i, n);
    // mask: lanes past n add nothing.
    acc = _mm512_mask_add_ps(acc, m, acc,
                             simd::exp2_16(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(m, x + i), l2e, sh)));
  }
  return simd::hsum16(_mm512_add_ps(acc, acc2));
#else
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int i = 0; i < n; ++i) s += exp_fast(x[i] - shift);
  return s;
#endif
}

// x[i] = exp(x[i] - shift) * scale for i < n
inline void exp_scale(float* x, int n, float shift, float scale) {
#if defined(__AVX512F__)
  const __m512 sh = _mm512_set1_ps(shift * kLog2e), sc = _mm512_set1_ps(scale), l2e = _mm512_set1_ps(kLog2e);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = lanes(i, n);
    const __m512 t = _mm512_fmsub_ps(_mm512_maskz_loadu_ps(m, x + i), l2e, sh);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(simd::exp2_16(t), sc));
  }
#else
#pragma omp simd
  for (int i = 0; i < n; ++i) x[i] = exp_fast(x[i] - shift) * scale;
#endif
}

void softmax_xent_forward(float* losses, float* lse, const float* logits, const int* targets, int N, int V,
                          int Vp) {
#pragma omp parallel for schedule(static) if (std::int64_t(N) * V >= kParallelMin)
  for (int n = 0; n < N; ++n) {
    const float* x = logits + std::int64_t(n) * Vp;
    float mx = -INFINITY, s = 0.0f;
    for (int c0 = 0; c0 < V; c0 += kXentChunk) {
      const int c1 = std::min(V, c0 + kXentChunk);
      float cm = -INFINITY;
#pragma omp simd reduction(max : cm)
      for (int i = c0; i < c1; ++i) cm = x[i] > cm ? x[i] : cm;
      // The max skips a NaN (every comparison with it is false); its exp below
      // carries it into the sum, and NaN * anything keeps it there.
      if (cm > mx) {
        s *= exp_fast(mx - cm);
        mx = cm;
      }
      s += exp_sum(x + c0, c1 - c0, mx);
    }
    const float l = mx + std::log(s);
    lse[n] = l;
    losses[n] = l - x[targets[n]];
  }
}

void softmax_xent_backward_inplace(float* logits, const float* lse, const int* targets, float dloss, int N, int V,
                                   int Vp) {
#pragma omp parallel for schedule(static) if (std::int64_t(N) * V >= kParallelMin)
  for (int n = 0; n < N; ++n) {
    float* x = logits + std::int64_t(n) * Vp;
    const float l = lse[n];
    exp_scale(x, V, l, dloss);
    x[targets[n]] -= dloss;
#pragma omp simd
    for (int i = V; i < Vp; ++i) x[i] = 0.0f;
  }
}

}  // namespace flopwatt::gpt2::kernels
