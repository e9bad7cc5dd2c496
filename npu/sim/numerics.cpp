#include "npu/sim/numerics.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "workloads/error.h"

namespace flopwatt::npu {

namespace {

// The micro-kernel's MR x NV vector accumulators must stay in registers: 8 x 2
// zmm with AVX-512; with 256-bit vectors, 6 x 2 ymm. (Sixteen-float vectors
// compiled for AVX2 were split and rebuilt through the stack on every k: 3
// GFLOP/s on a Zen 3 core.) The shape of the kernel does not change any sum:
// each output still adds its k-values in order, so the result is the same bits.
#if defined(__AVX512F__)
constexpr int VW = 16;  // floats per vector
constexpr int MR = 8;   // rows per micro-kernel
#else
constexpr int VW = 8;
constexpr int MR = 6;
#endif
constexpr int NV = 2;         // vectors per row
constexpr int NR = NV * VW;   // columns per micro-kernel
constexpr int MC = 264;       // rows per task (a multiple of both MRs)
constexpr int NC = 128;       // columns per task: MC x NC fp32 accumulators stay in L2
constexpr int KC = 256;       // K per packed B panel (rounded to a multiple of k_tile)
static_assert(NC % NR == 0 && MC % MR == 0);

typedef float vf __attribute__((vector_size(VW * 4), aligned(4)));
typedef unsigned int vu __attribute__((vector_size(VW * 4), aligned(4)));

inline vf load(const float* p) { return *reinterpret_cast<const vf*>(p); }
inline void store(float* p, vf v) { *reinterpret_cast<vf*>(p) = v; }

// Round-to-nearest-even to bf16, kept as float bits; NaN stays a quiet NaN
// (same rule as f32_to_bf16 in workloads/dtype.h).
inline vf round_bf16(vf x) {
  const vu u = (vu)x;
  const vu lsb = (u >> 16) & 1u;
  const vu rounded = (u + 0x7fffu + lsb) & 0xffff0000u;
  const vu nan = (u | 0x00400000u) & 0xffff0000u;
  const vu is_nan = (vu)((u & 0x7fffffffu) > 0x7f800000u);
  return (vf)((rounded & ~is_nan) | (nan & is_nan));
}

// Scalar twin of round_bf16, branch-free so packing loops vectorise.
inline float round_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  const std::uint32_t nan = (u | 0x00400000u) & 0xffff0000u;
  const std::uint32_t r = (u & 0x7fffffffu) > 0x7f800000u ? nan : rounded;
  float out;
  std::memcpy(&out, &r, 4);
  return out;
}

// The value the array receives for one operand element.
template <DType T>
inline float in_elem(const void* p, std::int64_t idx) {
  if constexpr (T == DType::F32) return round_bf16(static_cast<const float*>(p)[idx]);
  else return bf16_to_f32(static_cast<const bf16_t*>(p)[idx]);
}

// w[MR][NR] (row stride ldw) (+)= ap[kc][MR] . bp[kc][NR]; rounds to bf16 at the end of
// every `seg` k-values when round_seg.
void micro_kernel(const float* ap, const float* bp, float* w, int ldw, int kc, int seg, bool load_acc, bool round_seg) {
  vf c[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) c[r][v] = load_acc ? load(w + r * ldw + v * VW) : vf{};
  for (int k0 = 0; k0 < kc; k0 += seg) {
    const int k1 = std::min(kc, k0 + seg);
    for (int kk = k0; kk < k1; ++kk) {
      vf b[NV];
      for (int v = 0; v < NV; ++v) b[v] = load(bp + kk * NR + v * VW);
      const float* a = ap + kk * MR;
      for (int r = 0; r < MR; ++r)
        for (int v = 0; v < NV; ++v) c[r][v] += a[r] * b[v];
    }
    if (round_seg)
      for (int r = 0; r < MR; ++r)
        for (int v = 0; v < NV; ++v) c[r][v] = round_bf16(c[r][v]);
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) store(w + r * ldw + v * VW, c[r][v]);
}

// A as bf16-valued floats in MR-row panels: Ap[panel][k][r].
template <DType IN>
void pack_a(const GemmDesc& d, const void* A, float* Ap, std::int64_t panels) {
  const std::int64_t M = d.M, K = d.K, lda = d.eff_lda();
#pragma omp parallel for schedule(static)
  for (std::int64_t ip = 0; ip < panels; ++ip) {
    float* dst = Ap + std::size_t(ip) * K * MR;
    for (int r = 0; r < MR; ++r) {
      const std::int64_t i = ip * MR + r;
      if (i >= M) {
        for (std::int64_t kk = 0; kk < K; ++kk) dst[kk * MR + r] = 0.0f;
      } else if (!d.trans_a) {
        for (std::int64_t kk = 0; kk < K; ++kk) dst[kk * MR + r] = in_elem<IN>(A, i * lda + kk);
      } else {
        for (std::int64_t kk = 0; kk < K; ++kk) dst[kk * MR + r] = in_elem<IN>(A, kk * lda + i);
      }
    }
  }
}

// B panel: kc x NR bf16-valued floats from row k0 and column jb, zero columns past N.
template <DType IN>
void pack_b_panel(const GemmDesc& d, const void* B, float* bp, std::int64_t k0, int kc, std::int64_t jb, int nv) {
  const std::int64_t ldb = d.eff_ldb();
  if (!d.trans_b) {
    for (int kk = 0; kk < kc; ++kk) {
      float* row = bp + std::size_t(kk) * NR;
      const std::int64_t base = (k0 + kk) * ldb + jb;
      for (int j = 0; j < nv; ++j) row[j] = in_elem<IN>(B, base + j);
      for (int j = nv; j < NR; ++j) row[j] = 0.0f;
    }
  } else {
    for (int j = 0; j < NR; ++j) {
      const std::int64_t base = (jb + j) * ldb + k0;
      for (int kk = 0; kk < kc; ++kk) bp[std::size_t(kk) * NR + j] = j < nv ? in_elem<IN>(B, base + kk) : 0.0f;
    }
  }
}

// One task's mv x ncv block of results (row stride NC) into C at (i0, j0), with alpha and beta.
void store_block(const GemmDesc& d, void* C, const float* res, std::int64_t i0, std::int64_t j0, int mv, int ncv) {
  const bool out_bf16 = d.dtype_out == DType::BF16;
  const bool plain = d.alpha == 1.0f && d.beta == 0.0f;
  const std::int64_t ldc = d.eff_ldc();
  for (int i = 0; i < mv; ++i)
    for (int j = 0; j < ncv; ++j) {
      float v = res[std::size_t(i) * NC + j];
      const std::size_t ci = std::size_t(i0 + i) * ldc + std::size_t(j0 + j);
      if (!plain) {
        const float old = d.beta == 0.0f ? 0.0f
                          : out_bf16     ? bf16_to_f32(static_cast<const bf16_t*>(C)[ci])
                                         : static_cast<const float*>(C)[ci];
        v = d.alpha * v + (d.beta == 0.0f ? 0.0f : d.beta * old);
      }
      if (out_bf16) static_cast<bf16_t*>(C)[ci] = f32_to_bf16(v);
      else static_cast<float*>(C)[ci] = v;
    }
}

template <DType IN>
void run(const GemmDesc& d, const void* A, const void* B, void* C, int k_tile, std::int64_t k_chunk) {
  const std::int64_t M = d.M, N = d.N, K = d.K;
  const bool out_bf16 = d.dtype_out == DType::BF16;
  const int kc_max = std::max(1, KC / k_tile) * k_tile;
  const int seg = out_bf16 ? k_tile : kc_max;

  const std::int64_t panels = (M + MR - 1) / MR;
  std::vector<float> Ap(std::size_t(panels) * K * MR);
  pack_a<IN>(d, A, Ap.data(), panels);

  // Tasks are MC x NC blocks of C. Inside one, each K block of A (MC x kc,
  // from L2) is reused across the NC / NR panels of B.
  const std::int64_t nj = (N + NC - 1) / NC, ni = (M + MC - 1) / MC;
  const std::int64_t tasks = nj * ni;
  const bool chunked = K > k_chunk;
#pragma omp parallel
  {
    std::vector<float> bp(std::size_t(kc_max) * NR);
    std::vector<float> w(std::size_t(MC) * NC), acc(chunked ? std::size_t(MC) * NC : 0);
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t task = 0; task < tasks; ++task) {
      const std::int64_t j0 = (task % nj) * NC, i0 = (task / nj) * MC;
      const int ncv = int(std::min<std::int64_t>(NC, N - j0));
      const int mv = int(std::min<std::int64_t>(MC, M - i0));
      const int mp = (mv + MR - 1) / MR;      // row panels in this task
      const int jpanels = (ncv + NR - 1) / NR;
      int chunk_index = 0;
      for (std::int64_t c0 = 0; c0 < K; c0 += k_chunk, ++chunk_index) {
        const std::int64_t c1 = std::min(K, c0 + k_chunk);
        for (std::int64_t k0 = c0; k0 < c1; k0 += kc_max) {
          const int kc = int(std::min<std::int64_t>(kc_max, c1 - k0));
          for (int jp = 0; jp < jpanels; ++jp) {
            const std::int64_t jb = j0 + std::int64_t(jp) * NR;
            const int nv = int(std::min<std::int64_t>(NR, N - jb));
            pack_b_panel<IN>(d, B, bp.data(), k0, kc, jb, nv);
            for (int p = 0; p < mp; ++p) {
              const float* ap = Ap.data() + (std::size_t(i0 / MR + p) * K + k0) * MR;
              micro_kernel(ap, bp.data(), w.data() + std::size_t(p) * MR * NC + std::size_t(jp) * NR, NC, kc,
                           std::min(seg, kc), k0 != c0, out_bf16);
            }
          }
        }
        if (chunked) {  // the host adds the commands' partial results in fp32
          if (chunk_index == 0) std::copy(w.begin(), w.end(), acc.begin());
          else
            for (std::size_t x = 0; x < w.size(); ++x) acc[x] += w[x];
        }
      }
      store_block(d, C, chunked ? acc.data() : w.data(), i0, j0, mv, ncv);
    }
  }
}

}  // namespace

void simulate_gemm(const GemmDesc& d, const void* A, const void* B, void* C, int k_tile, std::int64_t k_chunk) {
  if (d.M <= 0 || d.N <= 0 || d.K <= 0) throw InputError("npu sim", "empty GEMM");
  if (k_tile <= 0) throw InputError("npu sim", "k_tile must be positive");
  if (k_chunk <= 0 || k_chunk > d.K) k_chunk = d.K;
  if (k_chunk < d.K && k_chunk % k_tile) throw InputError("npu sim", "k_chunk must be a multiple of k_tile");
  if (d.dtype_in == DType::F32) run<DType::F32>(d, A, B, C, k_tile, k_chunk);
  else run<DType::BF16>(d, A, B, C, k_tile, k_chunk);
}

}  // namespace flopwatt::npu
