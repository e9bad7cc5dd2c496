#include "cpu/llmc_gemm.h"

#include <omp.h>

#include <cstdint>

#include "cpu/gemm_checks.h"

// Written from a description of llm.c's CPU matmul, not from its source. llm.c
// is built with -Ofast; CMake gives this file the reassociation part of that
// (-fassociative-math and friends) so the forward pass's reduction over C
// vectorises as it does there. Nothing here is blocked for caches beyond what
// llm.c does: it is the baseline, not a BLAS.

namespace flopwatt::cpu {
namespace {

using i64 = std::int64_t;

// Rows of a forward block share every weight row they read: llm.c's unroll of 8.
constexpr int kRowBlock = 8;

struct Args {
  const float* a;
  const float* b;
  float* c;
  i64 M, N, K, lda, ldb, ldc;
  float alpha, beta;
};

// Output rows [row0, row0+R) for every output channel: R accumulators live in
// registers across the whole K (= C) loop. The beta term seeds the accumulator,
// as llm.c seeds it with the bias; with alpha != 1 the products are summed
// from zero and scaled at the end instead.
template <int R>
inline void forward_block(const Args& g, i64 row0) {
  const bool seed = g.alpha == 1.0f;
  const float* in[R];
  for (int r = 0; r < R; ++r) in[r] = g.a + (row0 + r) * g.lda;
  for (i64 o = 0; o < g.N; ++o) {
    const float* w = g.b + o * g.ldb;
    float init[R];
    for (int r = 0; r < R; ++r) init[r] = g.beta != 0.0f ? g.beta * g.c[(row0 + r) * g.ldc + o] : 0.0f;
    float acc[R];
    for (int r = 0; r < R; ++r) acc[r] = seed ? init[r] : 0.0f;
    for (i64 k = 0; k < g.K; ++k) {
      const float wk = w[k];
      for (int r = 0; r < R; ++r) acc[r] += in[r][k] * wk;
    }
    for (int r = 0; r < R; ++r) g.c[(row0 + r) * g.ldc + o] = seed ? acc[r] : g.alpha * acc[r] + init[r];
  }
}

// NT: parallel over blocks of 8 token rows, then the BT % 8 tail row by row.
void forward(const Args& g) {
  const i64 blocks = g.M / kRowBlock;
  const i64 tail0 = blocks * kRowBlock;
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (i64 blk = 0; blk < blocks; ++blk) forward_block<kRowBlock>(g, blk * kRowBlock);
#pragma omp for schedule(static)
    for (i64 row = tail0; row < g.M; ++row) forward_block<1>(g, row);
  }
}

inline void scale_row(float* row, i64 n, float beta) {
  if (beta == 0.0f) {
    for (i64 j = 0; j < n; ++j) row[j] = 0.0f;  // not beta*row: C may hold garbage or NaN when beta == 0
  } else if (beta != 1.0f) {
    for (i64 j = 0; j < n; ++j) row[j] *= beta;
  }
}

// NN (dinp): parallel over tokens; each token row walks all output channels and
// so reads the whole weight matrix, accumulating axpy-style into its output row.
void backward_input(const Args& g) {
#pragma omp parallel for schedule(static)
  for (i64 i = 0; i < g.M; ++i) {
    float* out = g.c + i * g.ldc;
    scale_row(out, g.N, g.beta);
    const float* d = g.a + i * g.lda;
    for (i64 o = 0; o < g.K; ++o) {
      const float s = g.alpha * d[o];
      const float* w = g.b + o * g.ldb;
      for (i64 j = 0; j < g.N; ++j) out[j] += w[j] * s;
    }
  }
}

// TN (dweight): parallel over output channels; each channel's row of dW loops
// over all tokens, reading dout's column o and the token's input row.
void backward_weight(const Args& g) {
#pragma omp parallel for schedule(static)
  for (i64 o = 0; o < g.M; ++o) {
    float* out = g.c + o * g.ldc;
    scale_row(out, g.N, g.beta);
    for (i64 t = 0; t < g.K; ++t) {
      const float s = g.alpha * g.a[t * g.lda + o];
      const float* x = g.b + t * g.ldb;
      for (i64 j = 0; j < g.N; ++j) out[j] += x[j] * s;
    }
  }
}

class LlmcBackend final : public Backend {
 public:
  std::string name() const override { return "cpu:llmc"; }
  Availability availability() const override { return {true, {}}; }
  bool supports(const GemmDesc& d) const override {
    if (d.dtype_in != DType::F32 || d.dtype_acc != DType::F32 || d.dtype_out != DType::F32) return false;
    return shape_valid(d) && !(d.trans_a && d.trans_b);
  }
  void gemm(const GemmDesc& d, const void* A, const void* B, void* C) override {
    require_supported(*this, d, "llm.c only has fp32 NT/NN/TN matmuls; use cpu:openblas or cpu:onednn");
    const Args g{static_cast<const float*>(A), static_cast<const float*>(B), static_cast<float*>(C),
                 d.M, d.N, d.K, d.eff_lda(), d.eff_ldb(), d.eff_ldc(), d.alpha, d.beta};
    if (!d.trans_a && d.trans_b)
      forward(g);
    else if (!d.trans_a && !d.trans_b)
      backward_input(g);
    else
      backward_weight(g);
  }
  std::vector<std::pair<std::string, std::string>> notes() const override {
    return {{"algorithm", "llm.c CPU matmul loop structure: fwd 8-row register blocks (NT), "
                          "bwd dinp per token (NN), dweight per output channel (TN); no BLAS"},
            {"compile", "reassociation allowed (-fassociative-math), the part of llm.c's -Ofast that lets the "
                        "forward reduction vectorise"},
            {"threads", std::to_string(omp_get_max_threads())}};
  }
};

}  // namespace

std::unique_ptr<Backend> make_llmc_backend() { return std::make_unique<LlmcBackend>(); }

}  // namespace flopwatt::cpu
