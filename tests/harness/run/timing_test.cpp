#include "harness/run/timing.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace flopwatt {
namespace {

// The timed loop is back to back: its repetitions sum to its window, and the
// warm-up is in neither.
TEST(Timing, RepetitionsTileTheWindowAfterTheWarmUp) {
  TimingOptions o;
  o.min_time_s = 0;
  o.min_reps = 4;
  o.warmup_reps = 2;
  std::vector<int> reps;
  std::int64_t warm_end = 0;
  const Timed t = time_repeated(o, [&](int rep) {
    reps.push_back(rep);
    if (rep == o.warmup_reps - 1) warm_end = monotonic_ns();
  });
  EXPECT_EQ(reps, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  ASSERT_EQ(t.rep_s.size(), 4u);
  EXPECT_GE(t.t0_ns, warm_end);
  const double sum = std::accumulate(t.rep_s.begin(), t.rep_s.end(), 0.0);
  EXPECT_NEAR(sum, double(t.t1_ns - t.t0_ns) * 1e-9, 1e-12);
}

// A window opened before the timed loop (hardware counters) holds all of it:
// before_timed runs once, after the warm-up and before t0 is read, so what it
// costs is in no repetition.
TEST(Timing, BeforeTimedRunsOnceBetweenWarmUpAndTheFirstTimestamp) {
  TimingOptions o;
  o.min_time_s = 0;
  o.min_reps = 3;
  o.warmup_reps = 1;
  std::vector<int> order;  // -1 marks before_timed
  std::int64_t opened = 0;
  const Timed t = time_repeated(
      o, [&](int rep) { order.push_back(rep); },
      [&] {
        order.push_back(-1);
        opened = monotonic_ns();
      });
  EXPECT_EQ(order, (std::vector<int>{0, -1, 1, 2, 3}));
  EXPECT_LE(opened, t.t0_ns);
}

// Interrupted during the warm-up: no repetition is timed, and nothing is
// opened that the caller would have to close unmeasured.
TEST(Timing, InterruptedInTheWarmUpTimesNothing) {
  TimingOptions o;
  o.warmup_reps = 2;
  int opened = 0;
  const Timed t = time_repeated(
      o, [&](int) { g_interrupted = true; }, [&] { ++opened; });
  g_interrupted = false;
  EXPECT_TRUE(t.rep_s.empty());
  EXPECT_EQ(opened, 0);
}

}  // namespace
}  // namespace flopwatt
