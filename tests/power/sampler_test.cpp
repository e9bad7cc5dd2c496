#include "power/sampler.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <thread>

#include "fake_counter.h"
#include "fixture_tree.h"
#include "power/battery.h"
#include "power/powercap_rapl.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FakeCounter;
using flopwatt::power::testing::FixtureTree;

namespace {

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

void package_zone(const FixtureTree& t, std::uint64_t max_uj) {
  t.write("sys/class/powercap/intel-rapl:0/name", "package-0\n");
  t.write("sys/class/powercap/intel-rapl:0/max_energy_range_uj", std::to_string(max_uj) + "\n");
  t.write("sys/class/powercap/intel-rapl:0/energy_uj", "0\n");
}

// A running sampler of the tree's powercap zones, reading every 10 ms.
std::unique_ptr<Sampler> started_sampler(const FixtureTree& t) {
  Discovery d;
  probe_powercap(t.root(), d);
  EXPECT_EQ(d.sources.size(), 1u);
  auto s = std::make_unique<Sampler>(std::move(d.sources), 0.010);
  s->start();
  return s;
}

}  // namespace

TEST(Sampler, FakeCounterAtKnownPowerWithinOnePercentAcrossWraps) {
  // A writer thread stalled by a loaded machine (ctest -j, other builds, a
  // sanitizer build) leaves the counter stale at a window edge, which is the
  // fixture's error, not the sampler's: take the best of up to five windows.
  // A wrap the sampler miscounts is in every window (it wraps twice in each),
  // so the best one still catches it. A stall is not bounded: CI once saw the
  // whole process stopped 0.63 s at a window's end (187 of 250 samples), and
  // the sample after it read the value from before the stall (15.0 W).
  WindowEnergy w;
  double best_err = 1e9;
  std::unique_ptr<Sampler> kept;
  for (int attempt = 0; attempt < 5 && best_err > 0.2; ++attempt) {
    FixtureTree t;
    const std::uint64_t max_uj = 20'000'000;  // wraps every second at 20 W
    package_zone(t, max_uj);
    FakeCounter fake(t, "sys/class/powercap/intel-rapl:0/energy_uj", 20.0, max_uj, 19'000'000);
    auto s = started_sampler(t);
    ASSERT_TRUE(s->running()) << "no powercap source found";
    sleep_s(0.1);
    const std::int64_t t0 = Sampler::now_ns();
    sleep_s(2.5);
    const std::int64_t t1 = Sampler::now_ns();
    const WindowEnergy wi = s->energy("rapl-powercap:package-0", t0, t1);
    s->stop();
    std::printf("[ measured ] fake counter at 20.000 W read as %.4f W over %.3f s (%zu samples)\n", wi.avg_power_w,
                double(t1 - t0) * 1e-9, wi.samples);
    if (std::abs(wi.avg_power_w - 20.0) < best_err) {
      best_err = std::abs(wi.avg_power_w - 20.0);
      w = wi;
      kept = std::move(s);
    }
  }
  Sampler& s = *kept;
  EXPECT_NEAR(w.avg_power_w, 20.0, 0.2);
  // On a loaded machine the sampler thread itself may be descheduled past two
  // periods; that is the only acceptable reason for low confidence here.
  if (w.low_confidence) {
    EXPECT_EQ(w.why_low.find("update interval"), std::string::npos) << w.why_low;
    EXPECT_NE(w.why_low.find("sampling gap"), std::string::npos) << w.why_low;
  }
  EXPECT_GT(w.samples, 150u);
  EXPECT_TRUE(s.sources()[0]->interval_measured());
  EXPECT_LT(s.sources()[0]->update_interval_s(), 0.05);  // about the 10 ms period
}

namespace {

// A discharging battery whose power_now gauge reads 12.5 W.
std::vector<std::unique_ptr<PowerSource>> battery_gauge_at_12_5_w(const FixtureTree& t) {
  t.write("sys/class/power_supply/BAT0/type", "Battery\n");
  t.write("sys/class/power_supply/BAT0/status", "Discharging\n");
  t.write("sys/class/power_supply/BAT0/power_now", "12500000\n");
  Discovery d;
  probe_battery(t.root(), d);
  return std::move(d.sources);
}

}  // namespace

TEST(Sampler, GaugeIntegratedAndShortWindowFlagged) {
  FixtureTree t;
  Sampler s(battery_gauge_at_12_5_w(t), 0.010);
  ASSERT_EQ(s.sources().size(), 1u);
  s.start();
  const std::int64_t t0 = Sampler::now_ns();
  sleep_s(0.6);
  const std::int64_t t1 = Sampler::now_ns();
  // Asked at once: must wait for the read after t1 (the gauge is read every 250 ms).
  const WindowEnergy w = s.energy("battery:BAT0", t0, t1);
  auto drained = s.drain_samples();
  s.stop();
  ASSERT_EQ(drained.size(), 1u);
  ASSERT_FALSE(drained[0].samples.empty());
  EXPECT_GE(drained[0].samples.back().t_ns, t1);
  EXPECT_EQ(drained[0].unit, "W");
  EXPECT_NEAR(w.avg_power_w, 12.5, 1e-9);
  EXPECT_NEAR(w.j, 12.5 * double(t1 - t0) * 1e-9, 1e-9);
  EXPECT_TRUE(w.low_confidence);  // 0.6 s < 3 x the 1 s nominal battery interval
  EXPECT_NE(w.why_low.find("update interval"), std::string::npos) << w.why_low;
  // Read no faster than a quarter of the update interval, not every 10 ms.
  EXPECT_LE(drained[0].samples.size(), 5u);
}

// A battery removed mid-run: its gauge must not be held at the last value
// (that would be joules nobody measured). The window gets the energy up to the
// last good read, is marked a gap, and the sampler lists the gap.
TEST(Sampler, AGaugeWhoseBatteryDisappearsYieldsAGapNotHeldEnergy) {
  FixtureTree t;
  Sampler s(battery_gauge_at_12_5_w(t), 0.010);
  ASSERT_EQ(s.sources().size(), 1u);
  s.start();
  const std::int64_t t0 = Sampler::now_ns();
  sleep_s(0.6);
  std::filesystem::remove_all(t.path("sys/class/power_supply/BAT0"));  // the battery is gone
  const std::int64_t gone = Sampler::now_ns();
  sleep_s(0.9);
  const std::int64_t t1 = Sampler::now_ns();
  const WindowEnergy w = s.energy("battery:BAT0", t0, t1);
  const WindowEnergy after = s.energy("battery:BAT0", gone + 400'000'000, t1);
  const auto gaps = s.gaps();
  s.stop();
  EXPECT_TRUE(w.gap);
  EXPECT_TRUE(w.low_confidence);
  EXPECT_NE(w.why_low.find("source gone during the window"), std::string::npos) << w.why_low;
  // At most the 0.6 s (plus one read interval) it was there, never 1.5 s held at 12.5 W.
  EXPECT_LE(w.j, 12.5 * (double(gone - t0) * 1e-9 + 0.3));
  EXPECT_TRUE(after.gap);
  EXPECT_EQ(after.j, 0.0);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].id, "battery:BAT0");
  EXPECT_EQ(gaps[0].to_ns, 0);
  EXPECT_LE(gaps[0].from_ns, gone);
}

TEST(Sampler, ReadFailuresAtAWindowEdgeShowAsAGap) {
  // The fake's writer runs in real time: under ctest -j2 one 0.5 s window
  // spanning the outage once read outside 3% of its 10 W. So the best of up
  // to three windows; the edge's gap must show in every one, and a sampler
  // that miscounts across an outage misreads each.
  double best = -1;
  for (int attempt = 0; attempt < 3 && std::abs(best - 10.0) > 0.3; ++attempt) {
    SCOPED_TRACE(::testing::Message() << "window " << attempt + 1);
    FixtureTree t;
    package_zone(t, 1'000'000'000);
    FakeCounter fake(t, "sys/class/powercap/intel-rapl:0/energy_uj", 10.0, 1'000'000'000, 0);
    const auto sp = started_sampler(t);
    Sampler& s = *sp;
    sleep_s(0.05);
    const std::int64_t t0 = Sampler::now_ns();
    sleep_s(0.2);
    fake.pause(true);
    ::unlink(t.path("sys/class/powercap/intel-rapl:0/energy_uj").c_str());  // reads fail for 100 ms
    sleep_s(0.05);
    const std::int64_t t_mid = Sampler::now_ns();  // inside the outage
    sleep_s(0.05);
    fake.pause(false);
    sleep_s(0.2);
    const std::int64_t t1 = Sampler::now_ns();
    const WindowEnergy edge = s.energy("rapl-powercap:package-0", t0, t_mid);
    const WindowEnergy across = s.energy("rapl-powercap:package-0", t0, t1);
    s.stop();
    EXPECT_TRUE(edge.low_confidence);
    EXPECT_NE(edge.why_low.find("sampling gap"), std::string::npos) << edge.why_low;
    if (std::abs(across.avg_power_w - 10.0) < std::abs(best - 10.0)) best = across.avg_power_w;
  }
  // The hardware counter kept counting through the outage, so a window that
  // spans it is still right.
  EXPECT_NEAR(best, 10.0, 0.3);
}

TEST(Sampler, DrainIsIncrementalAndStopTakesAFinalSample) {
  FixtureTree t;
  package_zone(t, 1'000'000'000);
  FakeCounter fake(t, "sys/class/powercap/intel-rapl:0/energy_uj", 5.0, 1'000'000'000, 0);
  const auto sp = started_sampler(t);
  Sampler& s = *sp;
  // Drains until at least n samples have come, for up to 5 s: on a loaded
  // machine (ctest -j2) the sampler thread once took only one sample in a
  // fixed 0.1 s, so the test waits for samples rather than for time.
  auto drain_at_least = [&](std::size_t n) {
    std::vector<Sample> got;
    for (int i = 0; i < 500 && got.size() < n; ++i) {
      sleep_s(0.01);
      auto part = s.drain_samples();
      EXPECT_EQ(part.size(), 1u);
      if (!part.empty()) got.insert(got.end(), part[0].samples.begin(), part[0].samples.end());
    }
    return got;
  };
  const auto a = drain_at_least(3);
  const auto b = drain_at_least(3);
  const std::int64_t before_stop = Sampler::now_ns();
  s.stop();
  auto last = s.drain_samples();
  auto none = s.drain_samples();
  ASSERT_GE(a.size(), 3u);
  ASSERT_GE(b.size(), 3u);
  ASSERT_EQ(last.size(), 1u);
  ASSERT_FALSE(last[0].samples.empty()) << "stop takes a final sample";
  EXPECT_TRUE(none[0].samples.empty()) << "a drain takes what came since the last one";
  EXPECT_GT(b.front().t_ns, a.back().t_ns);
  EXPECT_GE(last[0].samples.back().t_ns, before_stop);
  std::vector<Sample> after = b;
  after.insert(after.end(), last[0].samples.begin(), last[0].samples.end());
  for (std::size_t i = 1; i < after.size(); ++i) {
    EXPECT_GT(after[i].t_ns, after[i - 1].t_ns);
    EXPECT_GE(after[i].value, after[i - 1].value);
  }
  EXPECT_FALSE(s.running());
}

TEST(Sampler, UnknownSourceAndNoSources) {
  Sampler empty({}, 0.01);
  empty.start();
  EXPECT_FALSE(empty.running());
  const WindowEnergy w = empty.energy("rapl-powercap:package-0", 0, 1000);
  EXPECT_TRUE(w.low_confidence);
  EXPECT_NE(w.why_low.find("unknown source"), std::string::npos);
  empty.stop();
}

// A counter reset mid-window (the counter-reset fixture's case): the energy
// across it is lost, so the window says so instead of looking fine.
TEST(Sampler, CounterResetInsideAWindowIsLowConfidence) {
  FixtureTree t;
  package_zone(t, 262143328850ull);
  t.write("sys/class/powercap/intel-rapl:0/energy_uj", std::to_string(262143328850ull / 10 * 9) + "\n");
  const auto sp = started_sampler(t);
  Sampler& s = *sp;
  sleep_s(0.05);
  const std::int64_t t0 = Sampler::now_ns();
  sleep_s(0.02);
  const std::int64_t t_before = Sampler::now_ns();  // several reads before the reset
  sleep_s(0.05);
  t.replace("sys/class/powercap/intel-rapl:0/energy_uj", "0\n");
  sleep_s(0.1);
  const std::int64_t t1 = Sampler::now_ns();
  const WindowEnergy before = s.energy("rapl-powercap:package-0", t0, t_before);
  const WindowEnergy across = s.energy("rapl-powercap:package-0", t0, t1);
  s.stop();
  EXPECT_LT(across.j, 1.0);  // not 26 kJ
  EXPECT_TRUE(across.low_confidence);
  EXPECT_NE(across.why_low.find("counter reset"), std::string::npos) << across.why_low;
  EXPECT_EQ(before.why_low.find("counter reset"), std::string::npos) << before.why_low;
}

// A window's end is read when the window is asked for, not up to a period
// later at the sampler's next tick: with a 2 s period, the sample that closes
// a window ending 0.2 s after the start lies at the window's end (the old
// sampler waited for its tick at 2 s). A gauge not yet due keeps its rate:
// it is waited for, never read faster than its min_read_interval_s.
TEST(Sampler, AWindowsEndIsReadWhenAskedForWhereTheSourcesRateAllows) {
  FixtureTree t;
  package_zone(t, 1'000'000'000);
  Discovery d;
  probe_powercap(t.root(), d);
  for (auto& g : battery_gauge_at_12_5_w(t)) d.sources.push_back(std::move(g));
  const std::string gauge = "battery:BAT0";
  ASSERT_EQ(d.sources.back()->id(), gauge);
  ASSERT_EQ(d.sources.back()->kind(), Kind::Gauge);
  Sampler s(std::move(d.sources), 2.0);
  const std::int64_t t0 = Sampler::now_ns();
  s.start();
  sleep_s(0.2);
  const std::int64_t t1 = Sampler::now_ns();
  const WindowEnergy w = s.energy("rapl-powercap:package-0", t0, t1);
  const std::int64_t answered = Sampler::now_ns();
  const auto samples = s.drain_samples();
  std::int64_t closing = 0, gauge_after_start = 0;
  for (const auto& ss : samples) {
    for (const Sample& x : ss.samples) {
      if (ss.id == "rapl-powercap:package-0" && x.t_ns >= t1 && closing == 0) closing = x.t_ns;
      if (ss.id == gauge && x.t_ns > t0 + std::int64_t(0.1e9)) ++gauge_after_start;
    }
  }
  ASSERT_NE(closing, 0) << "no sample past the window's end";
  EXPECT_LE(closing, answered) << "the closing sample was taken before energy() answered";
  EXPECT_LT(closing - t1, std::int64_t(0.5e9)) << "the window's end waited for the next tick";
  EXPECT_GT(w.covered_s, 0);
  EXPECT_EQ(gauge_after_start, 0) << "a gauge not due was read at the counter's window end";
  s.stop();
}
