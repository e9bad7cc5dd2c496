// The operands `flopwatt run gemm` and flopwatt_bench time on: how many sets
// rotate for a shape, and which numbers a seed gives (both tools must draw the
// same ones, in the same order, as before they shared this code).
#include "harness/runners/gemm_operands.h"

#include <gtest/gtest.h>

#include "tests/sysfs/cpu0_cache_tree.h"

namespace flopwatt {
namespace {

GemmDesc desc(std::int64_t M, std::int64_t N, std::int64_t K, DType in = DType::F32) {
  GemmDesc d;
  d.M = M;
  d.N = N;
  d.K = K;
  d.dtype_in = in;
  return d;
}

TEST(GemmOperands, EnoughSetsToCoverTheRotationBytesWithinOneToEight) {
  // 64x64x64 fp32: A and B 2 x 16 KiB, C 16 KiB in fp32 = 48 KiB a set.
  const GemmDesc f32 = desc(64, 64, 64);
  EXPECT_EQ(rotated_set_count(f32, 3 * 49152, "/"), 3);
  EXPECT_EQ(rotated_set_count(f32, 3 * 49152 + 1, "/"), 4);  // rounded up: the sets cover at least the bytes
  EXPECT_EQ(rotated_set_count(f32, 1, "/"), 1);
  EXPECT_EQ(rotated_set_count(f32, std::size_t(1) << 40, "/"), 8);
  // bf16 A and B are half the bytes; C stays fp32: 32 KiB a set.
  EXPECT_EQ(rotated_set_count(desc(64, 64, 64, DType::BF16), 3 * 49152, "/"), 5);
  // A set larger than the rotation bytes is used alone.
  EXPECT_EQ(rotated_set_count(desc(4096, 4096, 4096), 64u << 20, "/"), 1);
}

// Under --sysfs-root the cache sizes are the tree's, not the machine's the
// tests run on: a 96 KiB last level means 192 KiB to cover, four 48 KiB sets.
TEST(GemmOperands, RotationCoversTwiceTheLastLevelCacheBelowTheRoot) {
  power::testing::FixtureTree t;
  sysfs::testing::write_cpu0_cache(t, "index0", "1", "Data", "32K");
  sysfs::testing::write_cpu0_cache(t, "index1", "2", "Unified", "96K");
  EXPECT_EQ(last_level_cache_bytes(t.root()), std::size_t(96) << 10);
  EXPECT_EQ(rotated_set_count(desc(64, 64, 64), 0, t.root()), 4);
  EXPECT_EQ(last_level_cache_bytes(t.path("no-sysfs-here")), std::size_t(32) << 20);
  EXPECT_GT(last_level_cache_bytes("/"), 0u);
}

TEST(GemmOperands, SeededDrawsOfAThenBThenCInEachSet) {
  const GemmDesc d = desc(3, 5, 7);
  std::mt19937_64 rng(20250403);
  const auto sets = make_rotated_operands(d, rng, 3 * (3 * 7 + 7 * 5 + 3 * 5) * 4, "/");
  ASSERT_EQ(sets.size(), 3u);
  std::mt19937_64 expect_rng(20250403);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const auto& s : sets) {
    ASSERT_EQ(s.a32.size(), 21u);
    ASSERT_EQ(s.b32.size(), 35u);
    ASSERT_EQ(s.c.size(), 15u);
    for (float x : s.a32) EXPECT_EQ(x, u(expect_rng));
    for (float x : s.b32) EXPECT_EQ(x, u(expect_rng));
    for (float x : s.c) EXPECT_EQ(x, u(expect_rng));
    EXPECT_TRUE(s.a16.empty());
    EXPECT_TRUE(s.b16.empty());
    EXPECT_EQ(s.A(DType::F32), s.a32.data());
    EXPECT_EQ(s.B(DType::F32), s.b32.data());
  }
  EXPECT_NE(sets[0].a32, sets[1].a32);
  // The generator goes on where the sets left it (the runner draws its next shape's operands from it).
  std::mt19937_64 fresh(20250403);
  const GemmOperands first = make_gemm_operands(d, fresh);
  EXPECT_EQ(first.a32, sets[0].a32);
  EXPECT_EQ(rng(), expect_rng());
}

TEST(GemmOperands, Bf16CopiesAreTheRoundedFloats) {
  const GemmDesc d = desc(4, 6, 8, DType::BF16);
  std::mt19937_64 rng(7);
  const GemmOperands o = make_gemm_operands(d, rng);
  ASSERT_EQ(o.a16.size(), o.a32.size());
  ASSERT_EQ(o.b16.size(), o.b32.size());
  for (std::size_t i = 0; i < o.a32.size(); ++i) EXPECT_EQ(o.a16[i], f32_to_bf16(o.a32[i]));
  for (std::size_t i = 0; i < o.b32.size(); ++i) EXPECT_EQ(o.b16[i], f32_to_bf16(o.b32[i]));
  for (float x : o.a32) {
    EXPECT_GE(x, -1.0f);
    EXPECT_LT(x, 1.0f);
  }
  EXPECT_EQ(o.A(DType::BF16), o.a16.data());
  EXPECT_EQ(o.B(DType::BF16), o.b16.data());
}

}  // namespace
}  // namespace flopwatt
