// The fused AdamW against its double-precision reference, with and without the
// bf16 shadow, over several steps so the bias corrections change.
#include "workloads/gpt2/adamw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/workloads/gpt2/compare.h"

namespace flopwatt::gpt2 {
namespace {

using testing::all_close;
using testing::random_vector;

TEST(AdamW, MatchesReferenceOverSteps) {
  for (std::int64_t n : {1, 7, 65, 257, 100001}) {
    for (float wd : {0.0f, 0.1f}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " wd=" << wd);
      AdamWConfig c;
      c.lr = 1e-3f;
      c.weight_decay = wd;
      auto p = random_vector(n, 1), rp = p;
      std::vector<float> m(n, 0), v(n, 0), rm(n, 0), rv(n, 0);
      std::vector<bf16_t> shadow(n);
      for (int t = 1; t <= 5; ++t) {
        auto g = random_vector(n, 10 + t, -0.1f, 0.1f);
        g[0] = 0.0f;  // zero gradient, zero moments: only decay may move it
        adamw_update(p.data(), g.data(), m.data(), v.data(), t % 2 ? shadow.data() : nullptr, n, c, t);
        adamw_update_reference(rp.data(), g.data(), rm.data(), rv.data(), n, c, t);
      }
      EXPECT_TRUE(all_close("p", p, rp, 1e-6, 1e-7));
      EXPECT_TRUE(all_close("m", m, rm, 1e-5, 1e-8));  // atol: fp32 ulp of |g| <= 0.1
      EXPECT_TRUE(all_close("v", v, rv, 1e-5, 1e-10));  // atol: fp32 ulp of g^2 <= 0.01
      // The shadow holds the parameters after the last update that wrote it (t=5).
      for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(shadow[i], f32_to_bf16(p[i]));
    }
  }
}

// The kernel splits work at 64-byte boundaries of p: arrays that start off that
// boundary, at different offsets from each other, with a shadow that cannot
// take aligned stores, and lengths around the parallel threshold, must all give
// the reference's numbers. Offsets are in floats into over-allocated buffers.
TEST(AdamW, AnyAlignmentAndLength) {
  struct Case {
    std::int64_t n;
    int off_p, off_g, off_mv, off_s;
  };
  for (auto [n, op, og, omv, os] : {Case{16 * 1024 + 5, 0, 0, 0, 0}, Case{16 * 1024 + 5, 3, 1, 7, 3},
                                    Case{16 * 1024 * 3 + 13, 1, 0, 2, 4}, Case{40, 15, 0, 15, 0},
                                    Case{17, 9, 2, 1, 1}}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n << " offsets p " << op << " g " << og << " m,v " << omv
                                      << " shadow " << os);
    AdamWConfig c;
    c.lr = 3e-3f;
    c.weight_decay = 0.1f;
    const std::int64_t pad = 32;
    auto p = random_vector(n + pad, 2), g = random_vector(n + pad, 3, -0.5f, 0.5f);
    std::vector<float> m(n + pad, 0), v(n + pad, 0);
    std::vector<bf16_t> shadow(n + pad, 0);
    std::vector<float> rp(p.begin() + op, p.begin() + op + n), rm(n, 0), rv(n, 0);
    std::vector<float> rg(g.begin() + og, g.begin() + og + n);
    for (int t = 1; t <= 3; ++t) {
      adamw_update(p.data() + op, g.data() + og, m.data() + omv, v.data() + omv, shadow.data() + os, n, c, t);
      adamw_update_reference(rp.data(), rg.data(), rm.data(), rv.data(), n, c, t);
    }
    EXPECT_TRUE(all_close("p", p.data() + op, rp.data(), n, 1e-6, 1e-7));
    EXPECT_TRUE(all_close("m", m.data() + omv, rm.data(), n, 1e-5, 1e-8));
    EXPECT_TRUE(all_close("v", v.data() + omv, rv.data(), n, 1e-5, 1e-10));
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(shadow[os + i], f32_to_bf16(p[op + i])) << i;
    // Nothing outside [0, n) is touched.
    for (int i = 0; i < os; ++i) ASSERT_EQ(shadow[i], 0);
    for (std::int64_t i = os + n; i < n + pad; ++i) ASSERT_EQ(shadow[i], 0);
    for (int i = 0; i < omv; ++i) ASSERT_EQ(m[i], 0.0f);
  }
}

// A NaN gradient poisons its own parameter and moments, and its bf16 copy is a
// NaN too: a diverged run must not look like a finite one in either precision.
TEST(AdamW, NaNGradientGivesNaNParameterAndShadow) {
  const std::int64_t n = 16 * 2048 + 3;
  AdamWConfig c;
  auto p = random_vector(n, 4), g = random_vector(n, 5);
  std::vector<float> m(n, 0), v(n, 0);
  std::vector<bf16_t> shadow(n);
  for (std::int64_t i : {std::int64_t(0), std::int64_t(5), n / 2, n - 1}) g[i] = std::numeric_limits<float>::quiet_NaN();
  adamw_update(p.data(), g.data(), m.data(), v.data(), shadow.data(), n, c, 1);
  for (std::int64_t i = 0; i < n; ++i) {
    const bool want_nan = std::isnan(g[i]);
    ASSERT_EQ(std::isnan(p[i]), want_nan) << i;
    ASSERT_EQ(std::isnan(bf16_to_f32(shadow[i])), want_nan) << i;
  }
}

TEST(AdamW, FirstStepMovesEachParameterByAboutLr) {
  // With bias correction, step 1 is lr * g / (|g| + eps): a signed step of ~lr.
  AdamWConfig c;
  c.lr = 0.01f;
  std::vector<float> p = {1.0f, 1.0f}, g = {0.5f, -2.0f}, m(2, 0), v(2, 0);
  adamw_update(p.data(), g.data(), m.data(), v.data(), nullptr, 2, c, 1);
  EXPECT_NEAR(p[0], 0.99f, 1e-6);
  EXPECT_NEAR(p[1], 1.01f, 1e-6);
}

}  // namespace
}  // namespace flopwatt::gpt2
