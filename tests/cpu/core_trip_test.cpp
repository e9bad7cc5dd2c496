#include "cpu/core_trip.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>

namespace flopwatt::cpu {
namespace {

TEST(CoreTrip, OneThreadHasNoOtherCore) { EXPECT_FALSE(core_round_trip_ns(1)); }

// A generous budget: under ctest -j2 the other thread may wait for a timeslice.
TEST(CoreTrip, TwoThreadsBounceALine) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one CPU online: no second core to bounce a line to";
  const auto ns = core_round_trip_ns(2, 3, 100, 5.0);
  ASSERT_TRUE(ns);
  EXPECT_TRUE(std::isfinite(*ns));
  EXPECT_GT(*ns, 1.0) << "a round trip between two cores is not faster than a cycle";
  EXPECT_LT(*ns, 1e7) << "nor slower than 10 ms";
}

// No time at all: every round gives up after its first 64 trips, and the
// figure is refused rather than taken from the rounds that never finished.
TEST(CoreTrip, RoundsOverTheirBudgetGiveNoFigure) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one CPU online: no second core to bounce a line to";
  EXPECT_FALSE(core_round_trip_ns(2, 3, 1000, 0.0));
}

}  // namespace
}  // namespace flopwatt::cpu
