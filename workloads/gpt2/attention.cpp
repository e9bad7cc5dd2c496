// Causal multi-head attention, forward and backward (contracts in kernels.h).
// One task per (batch, head): it owns that head's slices of every output, so
// nothing races and nothing needs zeroing (nor a barrier before the region's end). Two implementations:
//   *_blocked  when hs is a multiple of 16 (GPT-2: 64): the four products
//              (q k^T, att v, and in backward dout v^T, dpre k, dpre^T q, att^T dout)
//              run as register-blocked micro-kernels of R rows x 16 lanes that
//              GCC keeps in AVX-512 registers;
//   *_rows     any hs: one query row at a time, vectorized over keys or channels.
#include <algorithm>
#include <cmath>
#include <vector>

#include "workloads/gpt2/fast_math.h"
#include "workloads/gpt2/kernels.h"

namespace flopwatt::gpt2::kernels {

namespace {

constexpr std::int64_t kParallelMin = 1 << 14;
constexpr int kLanes = 16;

std::vector<float>& scratch(int slot) {
  thread_local std::vector<float> s[8];
  return s[slot];
}

int round_up(int x, int m) { return (x + m - 1) / m * m; }

// a[0, n) = softmax(scale * s[0, n)), a[n, T) = 0: one causal attention row.
// s may be a itself (each s[t2] is read before a[t2] is written).
inline void causal_softmax_row(float* a, const float* s, int n, int T, float scale) {
#if defined(__AVX512F__)
  // exp16 rather than exp_fast in an `omp simd` loop: see fast_math.h.
  const __m512 sc = _mm512_set1_ps(scale);
  __m512 vmx = _mm512_set1_ps(-INFINITY);
  for (int t2 = 0; t2 < n; t2 += 16) {
    const __mmask16 m = n - t2 >= 16 ? simd::kAll : static_cast<__mmask16>((1u << (n - t2)) - 1);
    vmx = _mm512_mask_max_ps(vmx, m, vmx, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + t2), sc));
  }
  const __m512 mx = _mm512_set1_ps(simd::hmax16(vmx));
  __m512 vsum = _mm512_setzero_ps();
  for (int t2 = 0; t2 < n; t2 += 16) {
    const __mmask16 m = n - t2 >= 16 ? simd::kAll : static_cast<__mmask16>((1u << (n - t2)) - 1);
    const __m512 e = simd::exp16(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(m, s + t2), sc, mx));
    _mm512_mask_storeu_ps(a + t2, m, e);
    vsum = _mm512_mask_add_ps(vsum, m, vsum, e);
  }
  const float inv = 1.0f / simd::hsum16(vsum);
#else
  float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
  for (int t2 = 0; t2 < n; ++t2) {
    const float x = s[t2] * scale;
    mx = x > mx ? x : mx;
  }
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int t2 = 0; t2 < n; ++t2) {
    const float e = exp_fast(s[t2] * scale - mx);
    a[t2] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
#endif
#pragma omp simd
  for (int t2 = 0; t2 < n; ++t2) a[t2] *= inv;
#pragma omp simd
  for (int t2 = n; t2 < T; ++t2) a[t2] = 0.0f;
}

// o[r][c0 + j] = sum_{k0 <= k < k1} p[r pr + k pk] * x[k][c0 + j] for r < R, j < 16:
// R x 16 accumulators held in registers across the whole k loop. p is read
// through two strides so that p^T (pr = 1) needs no transposed copy.
template <int R>
inline void panel_block(float* o, int ldo, const float* p, int pr, int pk, const float* x, int ldx, int k0, int k1,
                        int c0) {
  float acc[R][kLanes] = {};
  for (int k = k0; k < k1; ++k) {
    const float* xr = x + std::int64_t(k) * ldx + c0;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float pv = p[std::int64_t(r) * pr + std::int64_t(k) * pk];
#pragma omp simd
      for (int j = 0; j < kLanes; ++j) acc[r][j] += pv * xr[j];
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma omp simd
    for (int j = 0; j < kLanes; ++j) o[std::int64_t(r) * ldo + c0 + j] = acc[r][j];
}

// s[r][c0 + j] = sum_i q[r][i] * kt[i][c0 + j] for r < R, j < 16.
template <int R>
inline void dot_block(float* s, int lds, const float* q, int ldq, const float* kt, int ldk, int hs, int c0) {
  panel_block<R>(s, lds, q, ldq, 1, kt, ldk, 0, hs, c0);
}

// o[r][:hs] = sum_{k0 <= k < k1} p[r][k] * x[k][:hs] for r < R; hs % 16 == 0.
template <int R>
inline void axpy_block(float* o, int ldo, const float* p, int ldp, const float* x, int ldx, int k0, int k1, int hs) {
  for (int c0 = 0; c0 < hs; c0 += kLanes) panel_block<R>(o, ldo, p, ldp, 1, x, ldx, k0, k1, c0);
}

// The same with p transposed: o[r][:hs] = sum_k p[k][r] * x[k][:hs].
template <int R>
inline void axpy_block_t(float* o, int ldo, const float* p, int ldp, const float* x, int ldx, int k0, int k1,
                         int hs) {
  for (int c0 = 0; c0 < hs; c0 += kLanes) panel_block<R>(o, ldo, p, 1, ldp, x, ldx, k0, k1, c0);
}

// Packs rows [0, T) of an (T, ld) head slice into a (hs, Tp) transpose, zero-padded.
void pack_transposed(float* dst, const float* src, int ld, int T, int Tp, int hs) {
#if defined(__AVX512F__)
  // 16 x 16 tiles transposed in registers (hs % 16 == 0 on this path): four
  // rounds of vpermt2ps, each swapping the off-diagonal b x b blocks of every
  // 2b x 2b block. Element by element, the strided loads and stores of the
  // transpose took as long as the q k^T product itself at T = hs = 64.
  __m512i lo[4], hi[4];
  for (int s = 0, b = 8; b >= 1; ++s, b /= 2) {
    alignas(64) int l[16], h[16];
    for (int j = 0; j < 16; ++j) {
      l[j] = (j & b) ? 16 + j - b : j;
      h[j] = (j & b) ? 16 + j : j + b;
    }
    lo[s] = _mm512_load_si512(l);
    hi[s] = _mm512_load_si512(h);
  }
  for (int t0 = 0; t0 < Tp; t0 += 16)
    for (int i0 = 0; i0 < hs; i0 += 16) {
      __m512 r[16];
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j)
        r[j] = t0 + j < T ? _mm512_loadu_ps(src + std::int64_t(t0 + j) * ld + i0) : _mm512_setzero_ps();
#pragma GCC unroll 4
      for (int s = 0; s < 4; ++s)
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j)
          if (const int b = 8 >> s; !(j & b)) {
            const __m512 a = r[j], c = r[j + b];
            r[j] = _mm512_permutex2var_ps(a, lo[s], c);
            r[j + b] = _mm512_permutex2var_ps(a, hi[s], c);
          }
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) _mm512_storeu_ps(dst + std::int64_t(i0 + j) * Tp + t0, r[j]);
    }
#else
  for (int i = 0; i < hs; ++i) {
    float* d = dst + std::int64_t(i) * Tp;
    for (int t = 0; t < T; ++t) d[t] = src[std::int64_t(t) * ld + i];
    for (int t = T; t < Tp; ++t) d[t] = 0.0f;
  }
#endif
}

// q k^T for query rows [t0, t0 + R) against keys [0, t0 + R): causal, so the
// column chunks stop at the block's last row (the excess is masked by softmax).
template <int R>
void scores_block(float* S, int Tp, const float* q, int ldq, const float* kt, int hs, int t0, int T) {
  const int cols = std::min(T, t0 + R);
  for (int c0 = 0; c0 < cols; c0 += kLanes) dot_block<R>(S + std::int64_t(t0) * Tp, Tp, q + std::int64_t(t0) * ldq, ldq, kt, Tp, hs, c0);
}

void attention_forward_blocked(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  const int C3 = 3 * C, hs = C / NH, Tp = round_up(T, kLanes);
  const float scale = 1.0f / std::sqrt(float(hs));
#pragma omp parallel if (std::int64_t(B) * NH * T * T * hs >= kParallelMin)
  {
    std::vector<float>& kt = scratch(3);
    std::vector<float>& S = scratch(4);
    kt.resize(std::size_t(hs) * Tp);
    S.resize(std::size_t(Tp) * Tp);
#pragma omp for collapse(2) schedule(static) nowait
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < NH; ++h) {
        const float* q = qkv + std::int64_t(b) * T * C3 + h * hs;
        const float* k = q + C;
        const float* v = q + 2 * C;
        float* A = att + (std::int64_t(b) * NH + h) * T * T;
        float* y = out + std::int64_t(b) * T * C + h * hs;
        pack_transposed(kt.data(), k, C3, T, Tp, hs);
        int t0 = 0;
        for (; t0 + 8 <= T; t0 += 8) scores_block<8>(S.data(), Tp, q, C3, kt.data(), hs, t0, T);
        for (; t0 < T; ++t0) scores_block<1>(S.data(), Tp, q, C3, kt.data(), hs, t0, T);
        for (int t = 0; t < T; ++t) {
          const float* s = S.data() + std::int64_t(t) * Tp;
          float* a = A + std::int64_t(t) * T;
          const int n = t + 1;
          causal_softmax_row(a, s, n, T, scale);
        }
        // y = att v; att is zero above the diagonal, so rows [t0, t0+R) need keys < t0 + R.
        t0 = 0;
        for (; t0 + 4 <= T; t0 += 4)
          axpy_block<4>(y + std::int64_t(t0) * C, C, A + std::int64_t(t0) * T, T, v, C3, 0, t0 + 4, hs);
        for (; t0 < T; ++t0)
          axpy_block<1>(y + std::int64_t(t0) * C, C, A + std::int64_t(t0) * T, T, v, C3, 0, t0 + 1, hs);
      }
  }
}

void attention_backward_blocked(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T,
                                int C, int NH) {
  const int C3 = 3 * C, hs = C / NH, Tp = round_up(T, kLanes);
  const float scale = 1.0f / std::sqrt(float(hs));
#pragma omp parallel if (std::int64_t(B) * NH * T * T * hs >= kParallelMin)
  {
    std::vector<float>& vt = scratch(3);
    std::vector<float>& D = scratch(4);  // datt, then dpre in place
    vt.resize(std::size_t(hs) * Tp);
    D.resize(std::size_t(Tp) * Tp);
#pragma omp for collapse(2) schedule(static) nowait
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < NH; ++h) {
        const float* q = qkv + std::int64_t(b) * T * C3 + h * hs;
        const float* k = q + C;
        const float* v = q + 2 * C;
        const float* dy = dout + std::int64_t(b) * T * C + h * hs;
        const float* A = att + (std::int64_t(b) * NH + h) * T * T;
        float* dq = dqkv + std::int64_t(b) * T * C3 + h * hs;
        float* dk = dq + C;
        float* dv = dq + 2 * C;
        // datt = dout v^T (causal)
        pack_transposed(vt.data(), v, C3, T, Tp, hs);
        int t0 = 0;
        for (; t0 + 8 <= T; t0 += 8) scores_block<8>(D.data(), Tp, dy, C, vt.data(), hs, t0, T);
        for (; t0 < T; ++t0) scores_block<1>(D.data(), Tp, dy, C, vt.data(), hs, t0, T);
        // softmax backward: dpre = a (datt - sum(a datt)) scale; zero above the diagonal
        for (int t = 0; t < T; ++t) {
          float* d = D.data() + std::int64_t(t) * Tp;
          const float* a = A + std::int64_t(t) * T;
          const int n = t + 1;
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (int t2 = 0; t2 < n; ++t2) dot += a[t2] * d[t2];
#pragma omp simd
          for (int t2 = 0; t2 < n; ++t2) d[t2] = a[t2] * (d[t2] - dot) * scale;
#pragma omp simd
          for (int t2 = n; t2 < T; ++t2) d[t2] = 0.0f;
        }
        // dq = dpre k: rows [t0, t0+R) use keys < t0 + R
        t0 = 0;
        for (; t0 + 4 <= T; t0 += 4)
          axpy_block<4>(dq + std::int64_t(t0) * C3, C3, D.data() + std::int64_t(t0) * Tp, Tp, k, C3, 0, t0 + 4, hs);
        for (; t0 < T; ++t0)
          axpy_block<1>(dq + std::int64_t(t0) * C3, C3, D.data() + std::int64_t(t0) * Tp, Tp, k, C3, 0, t0 + 1, hs);
        // dk = dpre^T q and dv = att^T dout: key rows [t0, t0+R) get queries >= t0.
        // dpre and att are read down their columns in place: transposed copies
        // of both cost as much as the two products at T = 64.
        t0 = 0;
        for (; t0 + 4 <= T; t0 += 4) {
          axpy_block_t<4>(dk + std::int64_t(t0) * C3, C3, D.data() + t0, Tp, q, C3, t0, T, hs);
          axpy_block_t<4>(dv + std::int64_t(t0) * C3, C3, A + t0, T, dy, C, t0, T, hs);
        }
        for (; t0 < T; ++t0) {
          axpy_block_t<1>(dk + std::int64_t(t0) * C3, C3, D.data() + t0, Tp, q, C3, t0, T, hs);
          axpy_block_t<1>(dv + std::int64_t(t0) * C3, C3, A + t0, T, dy, C, t0, T, hs);
        }
      }
  }
}

void attention_forward_rows(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  // One task per (batch, head). The keys of the head are packed transposed
  // (hs x T) so the scores of row t are a vector loop over t2, not hs-long dot
  // products with a horizontal reduction each.
  const int C3 = 3 * C, hs = C / NH;
  const float scale = 1.0f / std::sqrt(float(hs));
#pragma omp parallel if (std::int64_t(B) * NH * T * T * hs >= kParallelMin)
  {
    std::vector<float>& kt = scratch(0);
    std::vector<float>& acc = scratch(1);
    kt.resize(std::size_t(hs) * T);
    acc.resize(std::size_t(hs) + T);
#pragma omp for collapse(2) schedule(static) nowait
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < NH; ++h) {
        const float* base = qkv + std::int64_t(b) * T * C3;
        for (int t2 = 0; t2 < T; ++t2) {
          const float* k = base + std::int64_t(t2) * C3 + C + h * hs;
          for (int i = 0; i < hs; ++i) kt[std::size_t(i) * T + t2] = k[i];
        }
        for (int t = 0; t < T; ++t) {
          const float* q = base + std::int64_t(t) * C3 + h * hs;
          float* a = att + ((std::int64_t(b) * NH + h) * T + t) * T;
          const int n = t + 1;
#pragma omp simd
          for (int t2 = 0; t2 < n; ++t2) a[t2] = 0.0f;
          for (int i = 0; i < hs; ++i) {
            const float qi = q[i];
            const float* kr = kt.data() + std::size_t(i) * T;
#pragma omp simd
            for (int t2 = 0; t2 < n; ++t2) a[t2] += qi * kr[t2];
          }
          causal_softmax_row(a, a, n, T, scale);
          float* o = acc.data();
#pragma omp simd
          for (int i = 0; i < hs; ++i) o[i] = 0.0f;
          for (int t2 = 0; t2 < n; ++t2) {
            const float w = a[t2];
            const float* v = base + std::int64_t(t2) * C3 + 2 * C + h * hs;
#pragma omp simd
            for (int i = 0; i < hs; ++i) o[i] += w * v[i];
          }
          float* y = out + (std::int64_t(b) * T + t) * C + h * hs;
#pragma omp simd
          for (int i = 0; i < hs; ++i) y[i] = o[i];
        }
      }
  }
}

void attention_backward_rows(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T,
                             int C, int NH) {
  // One task per (batch, head) owns that head's slices of dq, dk and dv, so no
  // two threads write the same element and nothing needs zeroing beforehand.
  // The softmax backward uses dpre = a * (datt - sum(a * datt)), O(T) per row.
  const int C3 = 3 * C, hs = C / NH;
  const float scale = 1.0f / std::sqrt(float(hs));
#pragma omp parallel if (std::int64_t(B) * NH * T * T * hs >= kParallelMin)
  {
    std::vector<float>& vt = scratch(0);
    std::vector<float>& dkv = scratch(1);
    std::vector<float>& row = scratch(2);
    vt.resize(std::size_t(hs) * T);
    dkv.resize(std::size_t(2) * T * hs);
    row.resize(std::size_t(2) * T + hs);
#pragma omp for collapse(2) schedule(static) nowait
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < NH; ++h) {
        const float* base = qkv + std::int64_t(b) * T * C3;
        float* dbase = dqkv + std::int64_t(b) * T * C3;
        for (int t2 = 0; t2 < T; ++t2) {
          const float* v = base + std::int64_t(t2) * C3 + 2 * C + h * hs;
          for (int i = 0; i < hs; ++i) vt[std::size_t(i) * T + t2] = v[i];
        }
        float* dk = dkv.data();
        float* dv = dk + std::size_t(T) * hs;
        std::fill(dkv.begin(), dkv.end(), 0.0f);
        float* datt = row.data();
        float* dq = datt + 2 * T;
        for (int t = 0; t < T; ++t) {
          const float* a = att + ((std::int64_t(b) * NH + h) * T + t) * T;
          const float* dy = dout + (std::int64_t(b) * T + t) * C + h * hs;
          const float* q = base + std::int64_t(t) * C3 + h * hs;
          const int n = t + 1;
#pragma omp simd
          for (int t2 = 0; t2 < n; ++t2) datt[t2] = 0.0f;
          for (int i = 0; i < hs; ++i) {
            const float di = dy[i];
            const float* vr = vt.data() + std::size_t(i) * T;
#pragma omp simd
            for (int t2 = 0; t2 < n; ++t2) datt[t2] += di * vr[t2];
          }
          for (int t2 = 0; t2 < n; ++t2) {
            const float w = a[t2];
            float* dvr = dv + std::size_t(t2) * hs;
#pragma omp simd
            for (int i = 0; i < hs; ++i) dvr[i] += w * dy[i];
          }
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (int t2 = 0; t2 < n; ++t2) dot += a[t2] * datt[t2];
          float* dpre = datt + T;
#pragma omp simd
          for (int t2 = 0; t2 < n; ++t2) dpre[t2] = a[t2] * (datt[t2] - dot) * scale;
#pragma omp simd
          for (int i = 0; i < hs; ++i) dq[i] = 0.0f;
          for (int t2 = 0; t2 < n; ++t2) {
            const float d = dpre[t2];
            const float* k = base + std::int64_t(t2) * C3 + C + h * hs;
            float* dkr = dk + std::size_t(t2) * hs;
#pragma omp simd
            for (int i = 0; i < hs; ++i) {
              dq[i] += d * k[i];
              dkr[i] += d * q[i];
            }
          }
          float* dqo = dbase + std::int64_t(t) * C3 + h * hs;
#pragma omp simd
          for (int i = 0; i < hs; ++i) dqo[i] = dq[i];
        }
        for (int t2 = 0; t2 < T; ++t2) {
          float* o = dbase + std::int64_t(t2) * C3 + h * hs;
#pragma omp simd
          for (int i = 0; i < hs; ++i) {
            o[C + i] = dk[std::size_t(t2) * hs + i];
            o[2 * C + i] = dv[std::size_t(t2) * hs + i];
          }
        }
      }
  }
}

}  // namespace

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  if ((C / NH) % kLanes == 0) attention_forward_blocked(out, att, qkv, B, T, C, NH);
  else attention_forward_rows(out, att, qkv, B, T, C, NH);
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T, int C,
                        int NH) {
  if ((C / NH) % kLanes == 0) attention_backward_blocked(dqkv, dout, qkv, att, B, T, C, NH);
  else attention_backward_rows(dqkv, dout, qkv, att, B, T, C, NH);
}

}  // namespace flopwatt::gpt2::kernels
