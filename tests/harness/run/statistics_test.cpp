#include "harness/run/statistics.h"

#include <gtest/gtest.h>

#include <random>

namespace flopwatt {
namespace {

TEST(Statistics, QuantilesInterpolateBetweenOrderStatistics) {
  std::vector<double> v = {5, 1, 4, 2, 3};
  EXPECT_DOUBLE_EQ(quantile(v, 0.5), 3);
  EXPECT_DOUBLE_EQ(quantile(v, 0.0), 1);
  EXPECT_DOUBLE_EQ(quantile(v, 1.0), 5);
  EXPECT_DOUBLE_EQ(quantile(v, 0.1), 1.4);
  EXPECT_DOUBLE_EQ(quantile({}, 0.5), 0);
}

TEST(Statistics, SummaryOfKnownSample) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  TimeStats s = summarize(v);
  EXPECT_DOUBLE_EQ(s.median, 50.5);
  EXPECT_NEAR(s.p10, 10.9, 1e-12);
  EXPECT_NEAR(s.p90, 90.1, 1e-12);
  EXPECT_DOUBLE_EQ(s.total, 5050);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
  // ranks 50 -+ 9.8 -> values 41 and 61 (0-based 40 and 60)
  EXPECT_DOUBLE_EQ(s.ci95_lo, 41);
  EXPECT_DOUBLE_EQ(s.ci95_hi, 61);
  EXPECT_LE(s.ci95_lo, s.median);
  EXPECT_GE(s.ci95_hi, s.median);
}

TEST(Statistics, SmallSamplesUseTheRange) {
  TimeStats s = summarize({3, 1, 2});
  EXPECT_DOUBLE_EQ(s.median, 2);
  EXPECT_DOUBLE_EQ(s.ci95_lo, 1);
  EXPECT_DOUBLE_EQ(s.ci95_hi, 3);
}

// The order-statistic interval should cover the true median ~95% of the time
// for a skewed (log-normal) timing distribution.
TEST(Statistics, MedianCiCoversTrueMedian) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> d(0.0, 0.5);  // true median = 1
  int covered = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> v(40);
    for (auto& x : v) x = d(rng);
    TimeStats s = summarize(v);
    covered += s.ci95_lo <= 1.0 && 1.0 <= s.ci95_hi;
  }
  const double rate = double(covered) / trials;
  EXPECT_GT(rate, 0.93);
  EXPECT_LT(rate, 0.995);
}

TEST(Statistics, WindowBasisAndStallFlag) {
  Measurement m;
  m.flop = 1e9;
  m.rep_times_s = {1, 1, 1, 1, 10};
  m.reps = 5;
  set_window_basis(m);
  ASSERT_TRUE(m.flop_per_s_window && m.rep_max_over_median && m.stalled);
  EXPECT_DOUBLE_EQ(*m.flop_per_s_window, 5e9 / 14);
  EXPECT_DOUBLE_EQ(*m.rep_max_over_median, 10);
  EXPECT_TRUE(*m.stalled);

  Measurement edge;  // exactly 2x the median is not a stall; just above is
  edge.flop = 1;
  edge.rep_times_s = {1, 1, 2};
  set_window_basis(edge);
  EXPECT_FALSE(*edge.stalled);
  edge.rep_times_s = {1, 1, 2.0001};
  set_window_basis(edge);
  EXPECT_TRUE(*edge.stalled);

  Measurement skipped;
  skipped.skipped = "backend unavailable";
  set_window_basis(skipped);
  EXPECT_FALSE(skipped.flop_per_s_window || skipped.stalled);
  Measurement none;  // no repetitions (interrupted): nothing to say
  set_window_basis(none);
  EXPECT_FALSE(none.flop_per_s_window || none.stalled);
}

}  // namespace
}  // namespace flopwatt
