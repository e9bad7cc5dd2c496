#include "cpu/reference_gemm.h"

#include <omp.h>

#include <vector>

#include "cpu/gemm_checks.h"

namespace flopwatt::cpu {
namespace {

inline double widen(float x) { return x; }
inline double widen(bf16_t x) { return bf16_to_f32(x); }

// Row i of op(A)·op(B) in double into acc[0..N). Rows are independent, which is
// what the OpenMP loop splits; the inner loops are kept contiguous in memory
// (axpy over B's rows when B is K x N, dot products when B is stored N x K) so
// the oracle stays usable on the 50304-wide GPT-2 shapes.
template <typename T>
void row_product(const GemmDesc& d, const T* A, const T* B, std::int64_t i, std::vector<double>& a_row,
                 double* acc) {
  const std::int64_t N = d.N, K = d.K, lda = d.eff_lda(), ldb = d.eff_ldb();
  for (std::int64_t k = 0; k < K; ++k) a_row[k] = widen(d.trans_a ? A[k * lda + i] : A[i * lda + k]);
  if (!d.trans_b) {
    for (std::int64_t j = 0; j < N; ++j) acc[j] = 0.0;
    for (std::int64_t k = 0; k < K; ++k) {
      const double a = a_row[k];
      const T* b = B + k * ldb;
      for (std::int64_t j = 0; j < N; ++j) acc[j] += a * widen(b[j]);
    }
  } else {
    for (std::int64_t j = 0; j < N; ++j) {
      const T* b = B + j * ldb;
      // An OpenMP simd reduction lets the dot product vectorise: the summation
      // order differs from a left fold, which in double is far below the
      // tolerances this oracle serves.
      double sum = 0;
#pragma omp simd reduction(+ : sum)
      for (std::int64_t k = 0; k < K; ++k) sum += a_row[k] * widen(b[k]);
      acc[j] = sum;
    }
  }
}

// Calls emit(i, acc) for every row, rows spread over the OpenMP threads.
template <typename T, typename Emit>
void for_each_row(const GemmDesc& d, const void* A, const void* B, Emit emit) {
  const T* a = static_cast<const T*>(A);
  const T* b = static_cast<const T*>(B);
#pragma omp parallel
  {
    std::vector<double> a_row(static_cast<std::size_t>(d.K));
    std::vector<double> acc(static_cast<std::size_t>(d.N));
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < d.M; ++i) {
      row_product(d, a, b, i, a_row, acc.data());
      emit(i, acc.data());
    }
  }
}

template <typename Emit>
void dispatch(const GemmDesc& d, const void* A, const void* B, Emit emit) {
  if (d.dtype_in == DType::BF16)
    for_each_row<bf16_t>(d, A, B, emit);
  else
    for_each_row<float>(d, A, B, emit);
}

class ReferenceBackend final : public Backend {
 public:
  std::string name() const override { return "cpu:reference"; }
  Availability availability() const override { return {true, {}}; }
  bool supports(const GemmDesc& d) const override {
    return shape_valid(d) && d.dtype_out == DType::F32;
  }
  void gemm(const GemmDesc& d, const void* A, const void* B, void* C) override {
    require_supported(*this, d, "C must be fp32 and every leading dimension at least its row length");
    float* c = static_cast<float*>(C);
    const std::int64_t N = d.N, ldc = d.eff_ldc();
    const double alpha = d.alpha, beta = d.beta;
    dispatch(d, A, B, [&](std::int64_t i, const double* acc) {
      float* row = c + i * ldc;
      for (std::int64_t j = 0; j < N; ++j)
        row[j] = static_cast<float>(alpha * acc[j] + (beta != 0.0 ? beta * row[j] : 0.0));
    });
  }
  std::vector<std::pair<std::string, std::string>> notes() const override {
    return {{"accumulation", "float64, naive loops (verification oracle)"},
            {"threads", std::to_string(omp_get_max_threads())}};
  }
};

}  // namespace

void reference_gemm_f64(const GemmDesc& d, const void* A, const void* B, const float* C_in, double* C_out) {
  const std::int64_t N = d.N, ldc = d.eff_ldc();
  const double alpha = d.alpha, beta = d.beta;
  dispatch(d, A, B, [&](std::int64_t i, const double* acc) {
    double* out = C_out + i * N;
    for (std::int64_t j = 0; j < N; ++j)
      out[j] = alpha * acc[j] + (beta != 0.0 ? beta * double(C_in[i * ldc + j]) : 0.0);
  });
}

std::unique_ptr<Backend> make_reference_backend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace flopwatt::cpu
