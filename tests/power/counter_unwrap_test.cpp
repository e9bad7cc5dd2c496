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
