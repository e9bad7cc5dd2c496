#include "cpu/llmc_gemm.h"

#include <gtest/gtest.h>

#include "gemm_test_support.h"
#include "workloads/error.h"

namespace flopwatt::cpu {
namespace {

TEST(LlmcGemm, SupportsOnlyLlmcsFp32Matmuls) {
  auto b = make_llmc_backend();
  EXPECT_EQ(b->name(), "cpu:llmc");
  EXPECT_TRUE(b->availability().ok);
  GemmDesc d;
  d.M = 8, d.N = 8, d.K = 8;
  for (int layout = 0; layout < 4; ++layout) {
    d.trans_a = layout & 2;
    d.trans_b = layout & 1;
    EXPECT_EQ(b->supports(d), layout != 3) << d.layout();
  }
  d.trans_a = false, d.trans_b = true;
  d.alpha = -3, d.beta = 0.25;
  EXPECT_TRUE(b->supports(d)) << "any alpha/beta";
  d.dtype_in = DType::BF16;
  EXPECT_FALSE(b->supports(d));
}

TEST(LlmcGemm, MatchesReferenceOnAwkwardShapes) {
  auto b = make_llmc_backend();
  int checked = 0;
  const auto cases = testing::awkward_cases(DType::F32);
  const auto failures = testing::check_all(*b, cases, false, &checked);
  EXPECT_EQ(checked, int(cases.size() * 3 / 4)) << "NN, NT and TN of every case";
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// The forward pass runs 8-row blocks plus a tail: cover 0..9 tail rows and blocks.
TEST(LlmcGemm, ForwardBlocksAndTails) {
  auto b = make_llmc_backend();
  for (std::int64_t M : {1, 7, 8, 9, 15, 16, 23, 41}) {
    GemmDesc d;
    d.M = M, d.N = 19, d.K = 37, d.trans_b = true, d.beta = 1.0f;
    const auto r = testing::check_against_reference(*b, d, std::uint64_t(M));
    EXPECT_LE(r.rel_error, 1e-4) << "M=" << M;
  }
}

TEST(LlmcGemm, NanInInputIsCaught) {
  auto b = make_llmc_backend();
  GemmDesc d;
  d.M = 17, d.N = 9, d.K = 33;
  for (int layout : {0, 1, 2}) {
    d.trans_a = layout & 2;
    d.trans_b = layout & 1;
    EXPECT_TRUE(testing::nan_in_input_is_caught(*b, d)) << d.layout();
  }
}

TEST(LlmcGemm, UnsupportedCallThrowsInputError) {
  auto b = make_llmc_backend();
  GemmDesc d;
  d.M = d.N = d.K = 2;
  d.trans_a = d.trans_b = true;
  float buf[4] = {};
  EXPECT_THROW(b->gemm(d, buf, buf, buf), InputError);
}

}  // namespace
}  // namespace flopwatt::cpu
