// The fused AdamW against its double-precision reference, with and without the
// bf16 shadow, over several steps so the bias corrections change.
#include "workloads/gpt2/adamw.h"

#include <gtest/gtest.h>

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
