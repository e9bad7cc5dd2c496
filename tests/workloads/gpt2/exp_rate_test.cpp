#include "workloads/gpt2/exp_rate.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <chrono>
#include <cmath>

#include "cpu/peak.h"

namespace flopwatt::gpt2 {
namespace {

// A deadline already past still gets one pass over the row, counted in full.
TEST(ExpRate, APassIsCountedWholeEvenPastTheDeadline) {
  EXPECT_EQ(exps_until(std::chrono::steady_clock::now() - std::chrono::seconds(1)), 64.0 * 1024);
  const double n = exps_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(5));
  EXPECT_GE(n, 64.0 * 1024);
  EXPECT_EQ(std::fmod(n, 64.0 * 1024), 0.0) << "whole passes";
}

// Rates depend on what else the machine runs and on how it was compiled
// (CI's sanitizer build read 93 M/s for one thread), so only a bound that
// catches a miscount: every exp has at least five dependent FMAs per 16 lanes,
// and no core issues more than two 16-lane FMAs per cycle, so one thread
// evaluates at most 6.4 exps per cycle, under 40 G/s below 6 GHz. A count of
// vectors rather than lanes, the miscount that reads too low, is the previous
// test's whole-pass count; a speed floor belongs in the benchmarks.
TEST(ExpRate, PositiveAndBelowWhatTheFmaPipesAllow) {
  for (int t : {1, omp_get_max_threads()}) {
    const double r = cpu::best_throughput(exps_until, t, 0.05);
    SCOPED_TRACE("threads=" + std::to_string(t));
    std::printf("[ measured ] %d thread(s): %.3g exp/s\n", t, r);
    EXPECT_TRUE(std::isfinite(r));
    EXPECT_GT(r, 0.0);
    EXPECT_LT(r, 40e9 * t);
  }
}

}  // namespace
}  // namespace flopwatt::gpt2
