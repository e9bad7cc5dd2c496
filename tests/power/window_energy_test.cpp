#include "power/window_energy.h"

#include <gtest/gtest.h>

using namespace flopwatt::power;

namespace {

constexpr std::int64_t kMs = 1'000'000;

// A counter sampled every 10 ms under constant power p (J since t = 0).
std::vector<Sample> counter(double p, std::int64_t from_ms, std::int64_t to_ms, std::int64_t step_ms = 10) {
  std::vector<Sample> s;
  for (std::int64_t t = from_ms; t <= to_ms; t += step_ms) s.push_back({t * kMs, p * double(t) * 1e-3});
  return s;
}

const WindowRules kFast{0.001, 0.010};

}  // namespace

TEST(WindowEnergy, CounterInterpolatedAtTheEdges) {
  auto s = counter(20.0, 0, 2000);
  // Edges fall between samples (t = 1003 ms and 1507 ms).
  WindowEnergy w = integrate_window(s, Kind::Counter, 1003 * kMs, 1507 * kMs, kFast);
  EXPECT_NEAR(w.j, 20.0 * 0.504, 1e-9);
  EXPECT_NEAR(w.avg_power_w, 20.0, 1e-9);
  EXPECT_FALSE(w.low_confidence) << w.why_low;
  EXPECT_EQ(w.samples, 50u);
}

TEST(WindowEnergy, GaugeTrapezoidIsExactOnARamp) {
  // Power ramps 10 W -> 30 W over 1 s, sampled every 10 ms: energy 20 J.
  std::vector<Sample> s;
  for (int t = 0; t <= 1000; t += 10) s.push_back({t * kMs, 10.0 + 20.0 * t / 1000.0});
  WindowEnergy w = integrate_window(s, Kind::Gauge, 0, 1000 * kMs, {0.01, 0.01});
  EXPECT_NEAR(w.j, 20.0, 1e-9);
  // A window inside, edges between samples: 0.25 s .. 0.755 s.
  WindowEnergy in = integrate_window(s, Kind::Gauge, 250 * kMs, 755 * kMs, {0.01, 0.01});
  const auto p = [](double t) { return 10.0 + 20.0 * t; };
  EXPECT_NEAR(in.j, 0.5 * (p(0.25) + p(0.755)) * 0.505, 1e-9);
}

TEST(WindowEnergy, GaugeStepBetweenSparseSamples) {
  // 5 W then 15 W, the change seen between reads 1 s apart: linear in between.
  std::vector<Sample> s{{0, 5.0}, {1000 * kMs, 5.0}, {2000 * kMs, 15.0}, {3000 * kMs, 15.0}};
  WindowEnergy w = integrate_window(s, Kind::Gauge, 0, 3000 * kMs, {1.0, 1.0});
  EXPECT_NEAR(w.j, 5 + 10 + 15, 1e-9);
  EXPECT_FALSE(w.low_confidence) << w.why_low;
}

TEST(WindowEnergy, ShortWindowForASlowGaugeIsLowConfidence) {
  std::vector<Sample> s;
  for (int t = 0; t <= 3000; t += 250) s.push_back({t * kMs, 8.0});
  WindowEnergy w = integrate_window(s, Kind::Gauge, 500 * kMs, 1300 * kMs, {1.0, 0.25});
  EXPECT_NEAR(w.j, 8.0 * 0.8, 1e-9);
  EXPECT_TRUE(w.low_confidence);
  EXPECT_NE(w.why_low.find("window 0.8 s < 3 x 1 s update interval"), std::string::npos) << w.why_low;
  WindowEnergy ok = integrate_window(s, Kind::Gauge, 0, 3000 * kMs, {1.0, 0.25});
  EXPECT_FALSE(ok.low_confidence) << ok.why_low;
}

// The loops the run lengthens to min_trusted_window_s are exactly long enough
// for the judgement: one rule, read by both.
TEST(WindowEnergy, TheTrustedSpanIsTheOneTheJudgementUses) {
  EXPECT_EQ(min_trusted_window_s(0), 0);
  EXPECT_EQ(min_trusted_window_s(-1), 0);
  std::vector<Sample> s;
  for (int t = 0; t <= 6000; t += 250) s.push_back({t * kMs, 8.0});
  const double span = min_trusted_window_s(1.0);
  const auto end = std::int64_t(span * 1000) * kMs;
  EXPECT_FALSE(integrate_window(s, Kind::Gauge, 0, end, {1.0, 0.25}).low_confidence);
  EXPECT_TRUE(integrate_window(s, Kind::Gauge, 0, end - 10 * kMs, {1.0, 0.25}).low_confidence);
}

TEST(WindowEnergy, GaugeSamplingGapIsLowConfidence) {
  std::vector<Sample> s;
  for (int t = 0; t <= 1000; t += 10)
    if (t <= 400 || t >= 450) s.push_back({t * kMs, 10.0});  // 50 ms without a sample
  WindowEnergy w = integrate_window(s, Kind::Gauge, 100 * kMs, 900 * kMs, kFast);
  EXPECT_NEAR(w.j, 8.0, 1e-9);
  EXPECT_TRUE(w.low_confidence);
  EXPECT_NE(w.why_low.find("sampling gap 50 ms > 2 x 10 ms"), std::string::npos) << w.why_low;
  // The same gap outside the window does not matter.
  EXPECT_FALSE(integrate_window(s, Kind::Gauge, 500 * kMs, 900 * kMs, kFast).low_confidence);
}

TEST(WindowEnergy, CounterGapMattersOnlyAtTheEdges) {
  auto s = counter(10.0, 0, 400);
  auto tail = counter(10.0, 450, 1000);  // 50 ms without a sample
  s.insert(s.end(), tail.begin(), tail.end());
  // Inside the window the hardware kept counting: the result is exact.
  WindowEnergy inside = integrate_window(s, Kind::Counter, 100 * kMs, 900 * kMs, kFast);
  EXPECT_NEAR(inside.j, 8.0, 1e-9);
  EXPECT_FALSE(inside.low_confidence) << inside.why_low;
  // A window edge interpolated across the gap is not.
  WindowEnergy edge = integrate_window(s, Kind::Counter, 425 * kMs, 900 * kMs, kFast);
  EXPECT_TRUE(edge.low_confidence);
  EXPECT_NE(edge.why_low.find("sampling gap 50 ms > 2 x 10 ms"), std::string::npos) << edge.why_low;
  WindowEnergy end = integrate_window(s, Kind::Counter, 100 * kMs, 420 * kMs, kFast);
  EXPECT_TRUE(end.low_confidence);
}

TEST(WindowEnergy, WindowBeyondTheLastSampleIsAGap) {
  // The counter's samples end 300 ms before the window does: the energy of
  // [100, 500] ms is no figure for [100, 800] ms.
  auto s = counter(10.0, 0, 500);
  WindowEnergy w = integrate_window(s, Kind::Counter, 100 * kMs, 800 * kMs, kFast);
  EXPECT_TRUE(w.gap);
  EXPECT_EQ(w.j, 0.0);
  EXPECT_NE(w.why_low.find("samples cover 0.4 s of the 0.7 s window"), std::string::npos) << w.why_low;
}

// A gauge of 20 W sampled every 100 ms from `from_ms` to `to_ms`.
std::vector<Sample> gauge_20w(std::int64_t from_ms, std::int64_t to_ms) {
  std::vector<Sample> s;
  for (std::int64_t t = from_ms; t <= to_ms; t += 100) s.push_back({t * kMs, 20.0});
  return s;
}

TEST(WindowEnergy, GaugeIsNotHeldPastItsLastSample) {
  // A meter's log that ends at 1 s, a program that runs 3 s: 20 W held for
  // the two seconds nobody measured was 60 J; it is no figure, with the reason.
  const WindowRules meter{0.1, 0.1};
  WindowEnergy w = integrate_window(gauge_20w(0, 1000), Kind::Gauge, 0, 3000 * kMs, meter);
  EXPECT_TRUE(w.gap);
  EXPECT_EQ(w.j, 0.0);
  EXPECT_NEAR(w.covered_s, 1.0, 1e-9);
  EXPECT_NE(w.why_low.find("samples cover 1 s of the 3 s window"), std::string::npos) << w.why_low;
  EXPECT_NE(w.why_low.find("no energy figure"), std::string::npos) << w.why_low;
}

TEST(WindowEnergy, GaugeIsNotHeldBeforeItsFirstSample) {
  const WindowRules meter{0.1, 0.1};
  WindowEnergy w = integrate_window(gauge_20w(2000, 5000), Kind::Gauge, 0, 3000 * kMs, meter);
  EXPECT_TRUE(w.gap);
  EXPECT_EQ(w.j, 0.0);
  EXPECT_NE(w.why_low.find("samples cover 1 s of the 3 s window"), std::string::npos) << w.why_low;
}

TEST(WindowEnergy, SamplesAllOutsideTheWindowAreNoFigure) {
  // A realtime log whose stamps are a day old: all before the window.
  const WindowRules meter{1.0, 1.0};
  constexpr std::int64_t kDay = 86400'000 * kMs;
  std::vector<Sample> old{{kDay, 20.0}, {kDay + 1000 * kMs, 20.0}, {kDay + 2000 * kMs, 20.0}};
  WindowEnergy w = integrate_window(old, Kind::Gauge, 2 * kDay, 2 * kDay + 3000 * kMs, meter);
  EXPECT_TRUE(w.gap);
  EXPECT_EQ(w.j, 0.0);
  EXPECT_EQ(w.covered_s, 0.0);
  EXPECT_NE(w.why_low.find("samples cover 0 s of the 3 s window"), std::string::npos) << w.why_low;
  // And after it.
  EXPECT_TRUE(integrate_window(old, Kind::Gauge, 0, 3000 * kMs, meter).gap);
}

TEST(WindowEnergy, ShortUncoveredEdgeTakesTheCoveredMeanNotAHeldSample) {
  // 10 W at the first sample (t = 10 ms), 30 W from 20 ms on; the window
  // starts 10 ms before the first sample, within two 10 ms spacings. Holding
  // the first sample back to 0 would add 10 W x 10 ms; the covered part's
  // mean power stands for the whole window instead.
  std::vector<Sample> s{{10 * kMs, 10.0}};
  for (std::int64_t t = 20; t <= 110; t += 10) s.push_back({t * kMs, 30.0});
  WindowEnergy w = integrate_window(s, Kind::Gauge, 0, 100 * kMs, kFast);
  EXPECT_FALSE(w.gap) << w.why_low;
  EXPECT_NEAR(w.covered_s, 0.09, 1e-12);
  const double covered_j = 0.5 * (10 + 30) * 0.01 + 30 * 0.08;
  EXPECT_NEAR(w.j, covered_j * 0.1 / 0.09, 1e-9);
  EXPECT_EQ(max_uncovered_s(kFast), 0.02);
}

TEST(WindowEnergy, StoppedCounterIsFlagged) {
  std::vector<Sample> s;
  for (int t = 0; t <= 1000; t += 10) s.push_back({t * kMs, 42.0});
  WindowEnergy w = integrate_window(s, Kind::Counter, 100 * kMs, 900 * kMs, kFast);
  EXPECT_EQ(w.j, 0.0);
  EXPECT_TRUE(w.low_confidence);
  EXPECT_NE(w.why_low.find("did not change"), std::string::npos);
}

TEST(WindowEnergy, NeverNegative) {
  std::vector<Sample> s{{0, 10.0}, {10 * kMs, 5.0}, {20 * kMs, 1.0}};
  EXPECT_EQ(integrate_window(s, Kind::Counter, 0, 20 * kMs, kFast).j, 0.0);
  std::vector<Sample> g{{0, -5.0}, {10 * kMs, -5.0}};
  EXPECT_EQ(integrate_window(g, Kind::Gauge, 0, 10 * kMs, kFast).j, 0.0);
}

TEST(WindowEnergy, EmptyInputs) {
  EXPECT_TRUE(integrate_window({}, Kind::Counter, 0, kMs, kFast).low_confidence);
  auto s = counter(1.0, 0, 100);
  WindowEnergy w = integrate_window(s, Kind::Counter, 50 * kMs, 50 * kMs, kFast);
  EXPECT_TRUE(w.low_confidence);
  EXPECT_EQ(w.j, 0.0);
}
