#include "power/counter_unwrap.h"

#include <gtest/gtest.h>

using flopwatt::power::CounterUnwrap;

TEST(CounterUnwrap, FirstReadingIsTheOrigin) {
  CounterUnwrap u(1000);
  EXPECT_EQ(u.update(700), 0.0);
  EXPECT_EQ(u.update(750), 50.0);
  EXPECT_EQ(u.update(750), 50.0);
}

TEST(CounterUnwrap, WrapAtModulusAddsOnlyTheDistanceTravelled) {
  CounterUnwrap u(1000);  // counts 0..999
  u.update(990);
  EXPECT_EQ(u.update(5), 15.0);  // 990 -> 999 (9), -> 0 (1), -> 5 (5)
  EXPECT_EQ(u.wraps(), 1u);
  EXPECT_EQ(u.update(20), 30.0);
}

TEST(CounterUnwrap, ThirtyTwoBitWrap) {
  CounterUnwrap u(1ull << 32);
  u.update(0xFFFFFF00u);
  EXPECT_EQ(u.update(0x100), double(0x200));
}

TEST(CounterUnwrap, LargeDropIsARestartNotEnergy) {
  CounterUnwrap u(1000);
  u.update(400);
  EXPECT_EQ(u.update(300), 0.0);  // "wrap" of 900 units: a restart
  EXPECT_EQ(u.restarts(), 1u);
  EXPECT_EQ(u.update(310), 10.0);
}

TEST(CounterUnwrap, UnknownModulusNeverGoesNegative) {
  CounterUnwrap u(0);
  u.update(5000);
  EXPECT_EQ(u.update(10), 0.0);
  EXPECT_EQ(u.update(30), 20.0);
  EXPECT_GE(u.total(), 0.0);
}

// The case: a powercap counter (max_energy_range_uj 262143328850, a
// common Intel value) read every 2 s drops from 0.9 x max to 0. As a wrap it
// would be 26 kJ in 2 s, 13 kW; with a 1 kW bound it is a reset: no energy.
TEST(CounterUnwrap, ResetFromNearTheTopIsNotAWrapWhenItImpliesImpossiblePower) {
  const std::uint64_t modulus = 262143328850ull + 1;
  CounterUnwrap u(modulus, 1000.0 * 1e6);  // uJ per s
  const std::int64_t s = 1000000000;
  u.update(std::uint64_t(0.9 * double(modulus)), 0);
  EXPECT_EQ(u.update(0, 2 * s), 0.0);
  EXPECT_EQ(u.restarts(), 1u);
  EXPECT_EQ(u.wraps(), 0u);
  EXPECT_TRUE(u.last_was_restart());
  EXPECT_GT(u.last_rejected_rate(), 1e10);  // about 1.3e10 uJ/s
  EXPECT_EQ(u.update(30000000, 3 * s), 30000000.0);  // 30 W for 1 s after the reset counts
  EXPECT_FALSE(u.last_was_restart());
}

TEST(CounterUnwrap, TrueWrapWithinTheBoundStillCounts) {
  const std::uint64_t modulus = 262143328850ull + 1;
  CounterUnwrap u(modulus, 1000.0 * 1e6);
  u.update(modulus - 100000, 0);
  EXPECT_EQ(u.update(200000, 10000000), 300000.0);  // 0.3 J in 10 ms = 30 W
  EXPECT_EQ(u.wraps(), 1u);
  EXPECT_EQ(u.restarts(), 0u);
}

TEST(CounterUnwrap, ForwardJumpAboveTheBoundIsAGapToo) {
  CounterUnwrap u(1ull << 32, 100.0);  // 100 units/s
  u.update(1000, 0);
  EXPECT_EQ(u.update(1000 + 5000, 1000000000), 0.0);  // 5000 units in 1 s
  EXPECT_TRUE(u.last_was_restart());
  EXPECT_EQ(u.update(1000 + 5050, 2000000000), 50.0);
}

TEST(CounterUnwrap, WithoutTimesTheBoundDoesNotApply) {
  CounterUnwrap u(1000, 1.0);
  u.update(990);
  EXPECT_EQ(u.update(5), 15.0);
}

// Two reads 50 us apart can straddle one 1 ms counter update: 0.1 J in 50 us
// is 2 kW "instantaneous", yet real energy.
TEST(CounterUnwrap, BackToBackReadsAcrossOneUpdateAreNotAReset) {
  CounterUnwrap u(1ull << 32, 1000.0 * 1e6);  // uJ
  u.update(1000, 0);
  EXPECT_EQ(u.update(1000 + 100000, 50000), 100000.0);
  EXPECT_FALSE(u.last_was_restart());
}
