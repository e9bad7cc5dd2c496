// A naive GEMM Backend for the gpt2 tests: double accumulation, every layout,
// fp32 and bf16 inputs. It keeps the tests independent of the CPU backends;
// `nn_only` refuses transposed layouts to exercise GemmRunner's fallback.
#pragma once
#include <string>

#include "workloads/backend.h"

namespace flopwatt::gpt2::testing {

class NaiveBackend : public Backend {
 public:
  explicit NaiveBackend(bool nn_only = false, bool fp32 = true, bool bf16 = true)
      : nn_only_(nn_only), fp32_(fp32), bf16_(bf16) {}
  std::string name() const override { return nn_only_ ? "test:naive-nn" : "test:naive"; }
  Availability availability() const override { return {true, ""}; }
  bool supports(const GemmDesc& d) const override {
    if (nn_only_ && (d.trans_a || d.trans_b)) return false;
    if (d.dtype_out != DType::F32) return false;
    return d.dtype_in == DType::F32 ? fp32_ : bf16_;
  }
  void gemm(const GemmDesc& d, const void* A, const void* B, void* Cv) override {
    ++calls;
    const std::int64_t lda = d.eff_lda(), ldb = d.eff_ldb(), ldc = d.eff_ldc();
    auto at = [&](const void* X, std::int64_t i) -> double {
      return d.dtype_in == DType::F32 ? static_cast<const float*>(X)[i]
                                      : bf16_to_f32(static_cast<const bf16_t*>(X)[i]);
    };
    float* C = static_cast<float*>(Cv);
    for (std::int64_t m = 0; m < d.M; ++m)
      for (std::int64_t n = 0; n < d.N; ++n) {
        double s = 0;
        for (std::int64_t k = 0; k < d.K; ++k) {
          const double a = d.trans_a ? at(A, k * lda + m) : at(A, m * lda + k);
          const double b = d.trans_b ? at(B, n * ldb + k) : at(B, k * ldb + n);
          s += a * b;
        }
        float& c = C[m * ldc + n];
        c = static_cast<float>(d.alpha * s + (d.beta != 0.0f ? double(d.beta) * c : 0.0));
      }
  }
  int calls = 0;

 private:
  bool nn_only_, fp32_, bf16_;
};

}  // namespace flopwatt::gpt2::testing
