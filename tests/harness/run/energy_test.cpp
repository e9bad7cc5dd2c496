// EnergyMeter against an external meter log whose power is known at every
// instant: gross and net energy of a window, the idle baseline and its spread,
// the guards that keep a FLOP/J from being divided by noise, the headline
// choice, and `--power none`.
#include "harness/run/energy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "workloads/error.h"

namespace flopwatt {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kSec = 1'000'000'000;

// The meter's power at t seconds after the log is opened ("# clock: relative",
// power/external_log.h). A noisy idle: 18 W then 22 W, so the six parts of a
// 0.5 s idle period have a spread of about 2.2 W (a 20 W mean); then a 30 W
// load, a load 1 W over idle (5% of its gross energy, inside the idle spread),
// a reading below idle.
double noisy_idle_w(double t) {
  if (t < 0.25) return 18.0;
  if (t < 1.0) return 22.0;
  if (t < 2.0) return 30.0;
  if (t < 3.0) return 21.0;
  if (t < 4.0) return 15.0;
  return 20.0;
}

// A perfectly steady idle (no spread), then a load 0.25% above it.
double steady_idle_w(double t) { return t < 2.0 ? 20.0 : 20.05; }

class EnergyMeterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("flopwatt_energy_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "root");  // an empty machine: the log is the only source
    write_log(noisy_idle_w);
  }
  void write_log(double (*profile_w)(double)) {
    std::ofstream f(dir_ / "meter.csv");
    f << "# clock: relative\n";
    for (int i = 0; i <= 500; ++i) f << i * 0.01 << "," << profile_w(i * 0.01) << "\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  PowerOptions options() const {
    PowerOptions o;
    o.sysfs_root = (dir_ / "root").string();
    o.power_log = (dir_ / "meter.csv").string();
    o.idle_s = 0.5;
    return o;
  }

  fs::path dir_;
};

TEST_F(EnergyMeterTest, NetEnergyIsGrossMinusIdlePowerTimesTime) {
  const std::int64_t opened = EnergyMeter::now_ns();
  EnergyMeter meter(options());
  ASSERT_TRUE(meter.active());
  flopwatt::Run run;
  meter.measure_idle(run);  // [0, 0.5 s] of the log
  ASSERT_EQ(run.idle.size(), 1u);
  const std::string id = run.idle.begin()->first;
  // 20 W when the idle period starts as the log opens; later by a few ms under load, a little more.
  EXPECT_NEAR(run.idle.at(id).power_w, 20.0, 0.5);

  // 0.6 s inside the 30 W stretch, with 0.2 s of margin for the opening time.
  const double flop = 6e9;
  const auto w = meter.window(opened + 12 * kSec / 10, opened + 18 * kSec / 10, flop);
  ASSERT_EQ(w.count(id), 1u);
  const EnergyFigures& f = w.at(id);
  EXPECT_NEAR(f.j, 18.0, 0.2);
  EXPECT_NEAR(f.avg_power_w, 30.0, 0.3);
  ASSERT_TRUE(f.flop_per_j.has_value());
  EXPECT_NEAR(*f.flop_per_j, flop / f.j, 1e-6 * flop);
  ASSERT_TRUE(f.net_j.has_value());
  EXPECT_NEAR(*f.net_j, f.j - run.idle.at(id).power_w * 0.6, 1e-3);  // about (30 - 20) W x 0.6 s
  ASSERT_TRUE(f.flop_per_j_net.has_value());
  EXPECT_NEAR(*f.flop_per_j_net, flop / *f.net_j, 1e-6 * flop);
  EXPECT_EQ(f.confidence, "ok") << f.why_low;
}

TEST_F(EnergyMeterTest, NetInsideTheIdleSpreadGivesNoNetFlopPerJoule) {
  const std::int64_t opened = EnergyMeter::now_ns();
  EnergyMeter meter(options());
  flopwatt::Run run;
  meter.measure_idle(run);
  const std::string id = run.idle.begin()->first;
  const IdleFigure& idle = run.idle.at(id);
  EXPECT_EQ(idle.windows, 6);
  ASSERT_TRUE(idle.sd_w.has_value());
  EXPECT_NEAR(*idle.sd_w, 2.2, 0.4);  // parts of 18 W and 22 W
  // 21 W: a net of about 0.6 J, 5% of the gross energy (the old 1% rule let it
  // through, giving a FLOP/J 20 times the gross one), but inside 2 x 2.2 W x 0.6 s.
  const auto near = meter.window(opened + 22 * kSec / 10, opened + 28 * kSec / 10, 1e9).at(id);
  EXPECT_FALSE(near.flop_per_j_net.has_value()) << *near.flop_per_j_net;
  EXPECT_FALSE(near.net_j.has_value());
  ASSERT_TRUE(near.flop_per_j.has_value());  // the gross figure stays
  EXPECT_EQ(near.confidence, "low");
  EXPECT_NE(near.why_low.find("idle noise"), std::string::npos) << near.why_low;
  // 15 W, below idle: no net figure at all, never a negative one.
  const auto below = meter.window(opened + 32 * kSec / 10, opened + 38 * kSec / 10, 1e9).at(id);
  EXPECT_FALSE(below.net_j.has_value());
  EXPECT_FALSE(below.flop_per_j_net.has_value());
  EXPECT_EQ(below.confidence, "low");
}

// A baseline must apply to the window: enough samples behind it, and the
// same supply. An idle window with no samples used to give 0 W and a net
// figure equal to the gross one, marked ok.
TEST(ApplyNet, ABaselineWithoutSamplesOrOnAnotherSupplyGivesNoNetFigure) {
  EnergyFigures f;
  f.j = 20;
  f.flop_per_j = 5e8;
  IdleFigure empty{0, 3, std::nullopt, 0, 0, "mains"};
  apply_net(f, empty, 1.0, 1e10, "mains");
  EXPECT_FALSE(f.net_j);
  EXPECT_FALSE(f.flop_per_j_net);
  EXPECT_NE(f.why_low.find("rests on 0 sample(s)"), std::string::npos) << f.why_low;

  EnergyFigures g;
  g.j = 20;
  IdleFigure on_mains{5, 3, 0.1, 6, 300, "mains"};
  apply_net(g, on_mains, 1.0, 1e10, "battery");
  EXPECT_FALSE(g.net_j);
  EXPECT_NE(g.why_low.find("taken on mains, this window ran on battery"), std::string::npos) << g.why_low;

  EnergyFigures h;
  h.j = 20;
  apply_net(h, on_mains, 1.0, 1e10, "mains");  // the same baseline where it applies
  ASSERT_TRUE(h.net_j);
  EXPECT_NEAR(*h.net_j, 15.0, 1e-9);
  EXPECT_NEAR(*h.flop_per_j_net, 1e10 / 15.0, 1e-3);
}

TEST_F(EnergyMeterTest, ASteadyIdleStillNeedsOnePercentOfGross) {
  write_log(steady_idle_w);
  const std::int64_t opened = EnergyMeter::now_ns();
  EnergyMeter meter(options());
  flopwatt::Run run;
  meter.measure_idle(run);
  const std::string id = run.idle.begin()->first;
  EXPECT_NEAR(run.idle.at(id).sd_w.value_or(-1), 0.0, 1e-9);
  // 20.05 W over 20 W: 0.25% of gross; a zero spread would let any excess through.
  const auto f = meter.window(opened + 22 * kSec / 10, opened + 28 * kSec / 10, 1e9).at(id);
  EXPECT_FALSE(f.flop_per_j_net.has_value()) << *f.flop_per_j_net;
  EXPECT_NE(f.why_low.find("1%"), std::string::npos) << f.why_low;
}

TEST_F(EnergyMeterTest, TheOnlySourceIsTheExpectedHeadline) {
  EnergyMeter meter(options());
  const auto h = meter.expected_headline();
  ASSERT_TRUE(h.has_value());
  bool listed = false;
  for (const auto& s : meter.source_infos()) listed = listed || (s.id == *h && s.available);
  EXPECT_TRUE(listed) << *h;
}

TEST_F(EnergyMeterTest, AnEmptyOrBackwardsWindowHasNoEnergy) {
  EnergyMeter meter(options());
  const std::int64_t t = EnergyMeter::now_ns();
  EXPECT_TRUE(meter.window(t, t, 1e9).empty());
  EXPECT_TRUE(meter.window(t, t - kSec, 1e9).empty());
}

TEST_F(EnergyMeterTest, PowerNoneSamplesNothing) {
  PowerOptions o = options();
  o.power = "none";
  EnergyMeter meter(o);
  EXPECT_FALSE(meter.active());
  EXPECT_FALSE(meter.expected_headline().has_value());
  flopwatt::Run run;
  meter.measure_idle(run);
  EXPECT_TRUE(run.idle.empty());
  const std::int64_t t = EnergyMeter::now_ns();
  EXPECT_TRUE(meter.window(t - kSec, t, 1e9).empty());
  EXPECT_EQ(meter.slowest_gauge_interval_s(), 0.0);
}

TEST_F(EnergyMeterTest, AnUnknownSourceOrDomainIsAnInputError) {
  PowerOptions o = options();
  o.power = "rapl-powercap:package-7";
  EXPECT_THROW(EnergyMeter{o}, InputError);
  o = options();
  o.headline_domain = "psys";
  EXPECT_THROW(EnergyMeter{o}, InputError);
}

}  // namespace
}  // namespace flopwatt
