#include "workloads/verify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace flopwatt {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Verify, RelativeFrobeniusOfAKnownDifference) {
  const std::vector<double> ref = {3, 4};  // ||ref|| = 5
  const std::vector<float> got = {3, 4.5f};  // ||diff|| = 0.5
  EXPECT_DOUBLE_EQ(rel_frobenius_error(got.data(), ref.data(), 2), 0.1);
  const std::vector<float> reff = {3, 4};
  EXPECT_DOUBLE_EQ(rel_frobenius_error(got.data(), reff.data(), 2), 0.1);
  EXPECT_DOUBLE_EQ(rel_frobenius_error(reff.data(), ref.data(), 2), 0.0);
}

TEST(Verify, NanAnywhereFails) {
  const std::vector<double> ref = {1, 2, 3};
  std::vector<float> got = {1, 2, 3};
  ASSERT_TRUE(passes(rel_frobenius_error(got.data(), ref.data(), 3), 1e-4));
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::vector<float> bad = got;
    bad[i] = kNaN;
    const double e = rel_frobenius_error(bad.data(), ref.data(), 3);
    EXPECT_TRUE(std::isnan(e));
    EXPECT_FALSE(passes(e, 1e-4));
    EXPECT_FALSE(passes(e, std::numeric_limits<double>::infinity())) << "no tolerance admits NaN";
  }
  std::vector<double> bad_ref = ref;
  bad_ref[1] = std::nan("");
  EXPECT_FALSE(passes(rel_frobenius_error(got.data(), bad_ref.data(), 3), 1e-4));
  got[2] = kInf;
  EXPECT_FALSE(passes(rel_frobenius_error(got.data(), ref.data(), 3), 1e-4));
}

TEST(Verify, ZeroReference) {
  const std::vector<double> zeros = {0, 0};
  const std::vector<float> got0 = {0, 0}, got1 = {0, 1e-30f};
  EXPECT_EQ(rel_frobenius_error(got0.data(), zeros.data(), 2), 0.0);
  EXPECT_TRUE(std::isinf(rel_frobenius_error(got1.data(), zeros.data(), 2)));
  EXPECT_FALSE(passes(rel_frobenius_error(got1.data(), zeros.data(), 2), 1e-4));
}

TEST(Verify, StridedIgnoresPaddingButNotData) {
  // 2x2 matrices; `got` has row stride 3 with a NaN in its padding column.
  const std::vector<float> got = {1, 2, kNaN, 3, 4, kNaN};
  const std::vector<double> ref = {1, 2, 3, 4};
  EXPECT_EQ(rel_frobenius_error(got.data(), 3, ref.data(), 2, 2, 2), 0.0);
  const std::vector<float> got_bad = {1, 2, 0, kNaN, 4, 0};
  EXPECT_FALSE(passes(rel_frobenius_error(got_bad.data(), 3, ref.data(), 2, 2, 2), 1e-4));
}

TEST(Verify, Tolerances) {
  EXPECT_EQ(gemm_tolerance(DType::F32), 1e-4);
  EXPECT_EQ(gemm_tolerance(DType::BF16), 1e-2);
  EXPECT_TRUE(passes(1e-4, 1e-4));
  EXPECT_FALSE(passes(1.01e-4, 1e-4));
}

}  // namespace
}  // namespace flopwatt
