#include "workloads/gpt2/exp_rate.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>

namespace flopwatt::gpt2 {
namespace {

// Rates depend on what else the machine runs: only bounds that catch a
// miscount. Every exp has at least five dependent FMAs per 16 lanes, and no
// core issues more than two 16-lane FMAs per cycle, so one thread evaluates
// at most 6.4 exps per cycle, under 40 G/s below 6 GHz. One thread also
// evaluates more than 100 M/s (a count of vectors rather than lanes would
// read 16 times too low: 0.6 G/s on a Zen 4 core); several threads wait for
// each other at each round's end, so on a loaded machine (ctest -j2 once
// read 16 M/s for two) only their upper bound holds.
TEST(ExpRate, PositiveAndBelowWhatTheFmaPipesAllow) {
  for (int t : {1, omp_get_max_threads()}) {
    const double r = measure_exp_rate(t, 0.05);
    SCOPED_TRACE("threads=" + std::to_string(t));
    std::printf("[ measured ] %d thread(s): %.3g exp/s\n", t, r);
    EXPECT_TRUE(std::isfinite(r));
    EXPECT_GT(r, t == 1 ? 1e8 : 0.0);
    EXPECT_LT(r, 40e9 * t);
  }
}

TEST(ExpRate, NothingToMeasureGivesZero) {
  EXPECT_EQ(measure_exp_rate(0, 0.01), 0.0);
  EXPECT_EQ(measure_exp_rate(1, 0.0), 0.0);
  EXPECT_EQ(measure_exp_rate(1, -1.0), 0.0);
  EXPECT_EQ(measure_exp_rate(1, std::nan("")), 0.0);
}

}  // namespace
}  // namespace flopwatt::gpt2
