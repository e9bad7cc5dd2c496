#include "cpu/reference_gemm.h"

#include <gtest/gtest.h>

#include <vector>

#include "gemm_test_support.h"
#include "workloads/verify.h"

namespace flopwatt::cpu {
namespace {

// The oracle itself is checked against products worked out by hand, so the
// other tests do not merely compare two copies of one mistake.
TEST(ReferenceGemm, SmallProductsByHand) {
  // A = [1 2 3; 4 5 6] (2x3), B = [1 0; 0 1; 2 -1] (3x2) -> A·B = [7 -1; 16 -1]
  const std::vector<float> A = {1, 2, 3, 4, 5, 6};
  const std::vector<float> B = {1, 0, 0, 1, 2, -1};
  GemmDesc d;
  d.M = 2, d.N = 2, d.K = 3;
  std::vector<double> out(4);
  reference_gemm_f64(d, A.data(), B.data(), nullptr, out.data());
  EXPECT_EQ(out, (std::vector<double>{7, -1, 16, -1}));

  // Same product with both operands stored transposed (TT).
  const std::vector<float> At = {1, 4, 2, 5, 3, 6};
  const std::vector<float> Bt = {1, 0, 2, 0, 1, -1};
  d.trans_a = d.trans_b = true;
  reference_gemm_f64(d, At.data(), Bt.data(), nullptr, out.data());
  EXPECT_EQ(out, (std::vector<double>{7, -1, 16, -1}));

  // alpha, beta and a padded C (ldc = 3): 2*(A·B) - 1*C.
  d.trans_a = d.trans_b = false;
  d.alpha = 2, d.beta = -1, d.ldc = 3;
  const std::vector<float> C = {1, 1, 99, 2, 2, 99};
  reference_gemm_f64(d, A.data(), B.data(), C.data(), out.data());
  EXPECT_EQ(out, (std::vector<double>{13, -3, 30, -4}));
}

TEST(ReferenceGemm, Bf16WidenedAndSummedInDouble) {
  // 2^24 + 1 is not a float but is a double: the sum must not pass through fp32.
  const std::vector<bf16_t> A = {f32_to_bf16(16777216.0f), f32_to_bf16(1.0f)};
  const std::vector<bf16_t> B = {f32_to_bf16(1.0f), f32_to_bf16(1.0f)};
  GemmDesc d;
  d.M = d.N = 1, d.K = 2;
  d.dtype_in = DType::BF16;
  double out = 0;
  reference_gemm_f64(d, A.data(), B.data(), nullptr, &out);
  EXPECT_EQ(out, 16777217.0);
  // bf16 1 + 2^-7 squared keeps its low bit.
  const float x = 1.0f + 1.0f / 128.0f;
  const std::vector<bf16_t> X = {f32_to_bf16(x)};
  d.K = 1;
  reference_gemm_f64(d, X.data(), X.data(), nullptr, &out);
  EXPECT_EQ(out, double(x) * double(x));
}

TEST(ReferenceGemm, BackendMatchesFloat64OracleOnAwkwardShapes) {
  auto backend = make_reference_backend();
  EXPECT_EQ(backend->name(), "cpu:reference");
  EXPECT_TRUE(backend->availability().ok);
  for (DType dt : {DType::F32, DType::BF16}) {
    int checked = 0;
    const auto failures = testing::check_all(*backend, testing::awkward_cases(dt), false, &checked);
    EXPECT_EQ(checked, int(testing::awkward_cases(dt).size())) << "the reference supports every case";
    for (const auto& f : failures) ADD_FAILURE() << f;
  }
}

TEST(ReferenceGemm, NanInInputIsCaught) {
  auto backend = make_reference_backend();
  GemmDesc d;
  d.M = 7, d.N = 65, d.K = 33;
  EXPECT_TRUE(testing::nan_in_input_is_caught(*backend, d));
  d.dtype_in = DType::BF16;
  EXPECT_TRUE(testing::nan_in_input_is_caught(*backend, d));
}

TEST(ReferenceGemm, RejectsMalformedDescs) {
  auto backend = make_reference_backend();
  GemmDesc d;
  d.M = 4, d.N = 4, d.K = 4, d.lda = 2;  // narrower than a row of A
  EXPECT_FALSE(backend->supports(d));
  std::vector<float> buf(64);
  EXPECT_ANY_THROW(backend->gemm(d, buf.data(), buf.data(), buf.data()));
}

}  // namespace
}  // namespace flopwatt::cpu
