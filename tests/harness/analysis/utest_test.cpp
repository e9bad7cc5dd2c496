#include "harness/analysis/utest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace flopwatt {
namespace {

// Expected values from scipy 1.10.1 (Debian python3-scipy), the function
// Google Benchmark's compare.py calls:
//   r = scipy.stats.mannwhitneyu(x, y, alternative="two-sided"); (r.statistic, r.pvalue)
// with its default method ("auto": exact when a sample has <= 8 values and
// nothing is tied, else the normal approximation with tie and continuity
// corrections). The random samples came from numpy's default_rng(12) and (7).
struct Case {
  const char* name;
  std::vector<double> x, y;
  double u1, p;
  const char* method;
};

const Case kCases[] = {
    {"exact_small_no_ties", {1.1, 2.3, 0.7, 4.5, 3.2}, {5.1, 6.2, 4.9, 7.7}, 0.0, 0.015873015873015872, "exact"},
    {"exact_2v2", {1.0, 2.0}, {3.0, 4.0}, 0.0, 0.3333333333333333, "exact"},
    {"exact_3v12",
     {9.993173, 11.046143, 10.741588},
     {11.723957, 12.618776, 9.794442, 10.373045, 9.679337, 10.892247, 11.998764, 10.978052, 11.49588, 9.089231,
      11.147064, 10.093057},
     15.0,
     0.734065934065934,
     "exact"},
    {"exact_8v8_overlap",
     {1.775389, 0.886849, 0.949349, -0.057855, 0.612862, 0.65789, -0.344403, -0.497372},
     {0.685227, 0.194548, 0.205661, 0.516625, 0.071582, 1.566328, -0.796086, 1.623562},
     33.0,
     0.959129759129759,
     "exact"},
    {"exact_8v40",
     {0.00123, 0.298746, -0.274138, -0.890592, -0.454671, -0.991647, 0.060144, 1.340215},
     {0.707793, 0.579525, 1.689842,  1.556887, 1.305414,  0.269532,  1.170748, 1.895303, -0.144215, 0.742384,
      -0.701223, -0.089538, -0.641735, 0.964909, -0.067446, 1.471264, 1.356751, 1.013069, -1.31676, 0.661307,
      1.151499, 1.313309,  -0.330136, 0.722247, 0.221481,  0.391163,  2.260899, 0.392465, 1.167478, 2.08439,
      0.6164,   1.088298,  1.310464,  1.263782, -0.025056, 1.27614,   2.558823, -0.347145, 2.059383, 1.319354},
     70.0,
     0.011225719605337017,  // the normal approximation would give 0.01329
     "exact"},
    {"ties_small", {1, 2, 2, 3, 3}, {2, 3, 4, 4, 5}, 4.0, 0.08567343955231686, "normal approximation"},
    {"asym_9v9",
     {-0.625566, -0.54594, -1.350847, -0.144242, -0.247662, 0.191456, -0.533774, 0.093756, 1.819692},
     {1.409, 0.42631, 1.95311, 0.871199, 1.593874, 1.612747, 0.608934, -0.930287, 0.652346},
     15.0,
     0.0272753837615853,
     "normal approximation"},
    {"asym_30v25_ties",
     {5.6, 4.6, 5.4, 6.0, 4.5, 6.2, 6.6, 6.1, 6.2, 6.1, 7.3, 5.2, 5.0, 5.6, 4.1,
      3.4, 4.1, 5.4, 5.5, 3.5, 3.1, 4.7, 4.8, 5.0, 5.7, 6.2, 5.2, 5.6, 3.9, 3.8},
     {5.6, 6.1, 6.1, 6.0, 6.2, 6.2, 3.6, 4.7, 5.9, 6.0, 3.9, 6.6, 5.0,
      5.2, 5.7, 6.1, 4.0, 6.4, 5.5, 4.6, 5.1, 3.2, 4.8, 5.6, 4.7},
     333.0,
     0.4823404091750858,
     "normal approximation"},
    {"identical", {1, 1, 1}, {1, 1, 1}, 4.5, 1.0, "normal approximation"},
    {"equal_sets", {1, 2, 3, 4}, {1, 2, 3, 4}, 8.0, 1.0, "normal approximation"},
};

TEST(MannWhitneyU, MatchesScipyTwoSided) {
  for (const Case& c : kCases) {
    const UTestResult r = mann_whitney_u(c.x, c.y);
    EXPECT_DOUBLE_EQ(r.u1, c.u1) << c.name;
    EXPECT_NEAR(r.p, c.p, 1e-12 + 1e-9 * c.p) << c.name;
    EXPECT_EQ(r.method, c.method) << c.name;
    // Swapping the samples swaps U1 and U2 and leaves the two-sided p alone.
    const UTestResult s = mann_whitney_u(c.y, c.x);
    EXPECT_DOUBLE_EQ(s.u1, double(c.x.size() * c.y.size()) - c.u1) << c.name;
    EXPECT_NEAR(s.p, c.p, 1e-12 + 1e-9 * c.p) << c.name;
  }
}

TEST(MannWhitneyU, EmptySampleIsNoTest) {
  const UTestResult r = mann_whitney_u({}, {1, 2, 3});
  EXPECT_EQ(r.method, "none");
  EXPECT_EQ(r.p, 1.0);
}

TEST(MannWhitneyU, CompletelySeparatedLargeSamplesAreSignificant) {
  std::vector<double> a, b;
  for (int i = 0; i < 50; ++i) a.push_back(i), b.push_back(100 + i);
  const UTestResult r = mann_whitney_u(a, b);
  EXPECT_EQ(r.u1, 0);
  EXPECT_LT(r.p, 1e-15);
  EXPECT_GT(r.p, 0);
}

}  // namespace
}  // namespace flopwatt
