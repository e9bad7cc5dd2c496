#include "power/battery.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fixture_tree.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FixtureTree;

namespace {

const char* kBat = "sys/class/power_supply/BAT0/";

const SourceStatus* status(const Discovery& d, const std::string& id) {
  for (const auto& s : d.status)
    if (s.id == id) return &s;
  return nullptr;
}
PowerSource* source(const Discovery& d, const std::string& id) {
  for (const auto& s : d.sources)
    if (s->id() == id) return s.get();
  return nullptr;
}

void battery(const FixtureTree& t, const std::string& status) {
  t.write(std::string(kBat) + "type", "Battery\n");
  t.write(std::string(kBat) + "status", status + "\n");
  t.write(std::string(kBat) + "present", "1\n");
}

}  // namespace

TEST(Battery, PowerNowOnly) {
  FixtureTree t;
  battery(t, "Discharging");
  t.write(std::string(kBat) + "power_now", "12500000\n");
  Discovery d;
  probe_battery(t.root(), d);
  PowerSource* b = source(d, "battery:BAT0");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind(), Kind::Gauge);
  EXPECT_EQ(b->domain(), "battery");
  EXPECT_DOUBLE_EQ(b->read()->value, 12.5);
  EXPECT_NE(status(d, "battery:BAT0")->note.find("power_now"), std::string::npos);
  const SourceStatus* e = status(d, "battery-energy:BAT0");
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->available);
  EXPECT_NE(e->reason.find("energy_now"), std::string::npos);
}

TEST(Battery, NegativePowerNowIsAMagnitude) {
  FixtureTree t;
  battery(t, "Discharging");
  t.write(std::string(kBat) + "power_now", "-8000000\n");  // some drivers sign the discharge
  Discovery d;
  probe_battery(t.root(), d);
  EXPECT_DOUBLE_EQ(source(d, "battery:BAT0")->read()->value, 8.0);
}

TEST(Battery, CurrentTimesVoltageOnly) {
  FixtureTree t;
  battery(t, "Discharging");
  t.write(std::string(kBat) + "current_now", "1500000\n");   // 1.5 A
  t.write(std::string(kBat) + "voltage_now", "11400000\n");  // 11.4 V
  Discovery d;
  probe_battery(t.root(), d);
  PowerSource* b = source(d, "battery:BAT0");
  ASSERT_TRUE(b);
  EXPECT_NEAR(b->read()->value, 17.1, 1e-9);
  EXPECT_NE(status(d, "battery:BAT0")->note.find("current_now x voltage_now"), std::string::npos);
}

// power_now written in mW where sysfs-class-power says uW (12.5 W reads as
// 12.5 mW) next to a consistent current_now x voltage_now: the product is
// read and the note says why. The mW figure once gave 9.7 TFLOP/J.
TEST(Battery, PowerNowInTheWrongUnitIsCrossCheckedAgainstCurrentTimesVoltage) {
  FixtureTree t;
  battery(t, "Discharging");
  t.write(std::string(kBat) + "power_now", "12500\n");       // mW, wrongly
  t.write(std::string(kBat) + "current_now", "1096491\n");   // 1.096 A
  t.write(std::string(kBat) + "voltage_now", "11400000\n");  // 11.4 V: 12.5 W
  Discovery d;
  probe_battery(t.root(), d);
  PowerSource* b = source(d, "battery:BAT0");
  ASSERT_TRUE(b);
  EXPECT_NEAR(b->read()->value, 12.5, 1e-3);
  const std::string note = status(d, "battery:BAT0")->note;
  EXPECT_NE(note.find("disagrees with current_now x voltage_now"), std::string::npos) << note;
  EXPECT_NE(note.find("factor of 1e+03"), std::string::npos) << note;
  // Readings that agree within a factor of 10 keep power_now.
  t.write(std::string(kBat) + "power_now", "13000000\n");
  Discovery d2;
  probe_battery(t.root(), d2);
  EXPECT_NEAR(source(d2, "battery:BAT0")->read()->value, 13.0, 1e-9);
  EXPECT_EQ(status(d2, "battery:BAT0")->note.find("disagrees"), std::string::npos);
}

TEST(Battery, EnergyNowOnlyGivesPowerAfterTwoChanges) {
  FixtureTree t;
  battery(t, "Discharging");
  t.write(std::string(kBat) + "energy_now", "40000000\n");
  Discovery d;
  probe_battery(t.root(), d);
  EXPECT_FALSE(status(d, "battery:BAT0")->available);
  PowerSource* e = source(d, "battery-energy:BAT0");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind(), Kind::Gauge);
  EXPECT_FALSE(e->read());  // no change seen yet
  t.write(std::string(kBat) + "energy_now", "39990000\n");
  EXPECT_FALSE(e->read());  // first change: its start time is unknown
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  t.write(std::string(kBat) + "energy_now", "39988000\n");  // 2000 uWh = 7.2 J
  auto s = e->read();
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(s);
  // 7.2 J over the ~200 ms between the two observed changes.
  EXPECT_NEAR(s->value, 7.2 / dt, 7.2 / dt * 0.05);
  auto again = e->read();  // no new change: the estimate holds
  ASSERT_TRUE(again);
  EXPECT_EQ(again->value, s->value);
}

TEST(Battery, ChargeNowTimesVoltage) {
  FixtureTree t;
  battery(t, "Discharging");
  t.write(std::string(kBat) + "charge_now", "3000000\n");
  t.write(std::string(kBat) + "voltage_now", "10000000\n");
  Discovery d;
  probe_battery(t.root(), d);
  EXPECT_TRUE(status(d, "battery-energy:BAT0")->available);
  EXPECT_NE(status(d, "battery-energy:BAT0")->note.find("charge_now"), std::string::npos);
}

TEST(Battery, ChargingIsSaidSo) {
  FixtureTree t;
  battery(t, "Charging");
  t.write(std::string(kBat) + "power_now", "20000000\n");
  Discovery d;
  probe_battery(t.root(), d);
  EXPECT_NE(status(d, "battery:BAT0")->note.find("going into the battery"), std::string::npos);
  EXPECT_DOUBLE_EQ(source(d, "battery:BAT0")->read()->value, 20.0);
}

TEST(Battery, EmptyBayIsListedNotSampled) {
  FixtureTree t;
  t.write("sys/class/power_supply/BAT1/type", "Battery\n");
  t.write("sys/class/power_supply/BAT1/present", "0\n");
  Discovery d;
  probe_battery(t.root(), d);
  EXPECT_TRUE(d.sources.empty());
  ASSERT_EQ(d.status.size(), 1u);
  EXPECT_EQ(d.status[0].id, "battery:BAT1");
  EXPECT_NE(d.status[0].reason.find("empty"), std::string::npos);
}

TEST(Battery, PeripheralBatteriesAndAdaptersAreNotSources) {
  FixtureTree t;
  t.write("sys/class/power_supply/hidpp_battery_0/type", "Battery\n");
  t.write("sys/class/power_supply/hidpp_battery_0/scope", "Device\n");
  t.write("sys/class/power_supply/hidpp_battery_0/power_now", "1\n");
  t.write("sys/class/power_supply/AC/type", "Mains\n");
  t.write("sys/class/power_supply/AC/online", "1\n");
  Discovery d;
  probe_battery(t.root(), d);
  EXPECT_TRUE(d.sources.empty());
  ASSERT_EQ(d.status.size(), 1u);
  EXPECT_EQ(d.status[0].id, "battery:*");
  EXPECT_NE(d.status[0].reason.find("no battery"), std::string::npos);
}

// The two-battery laptop: BAT0 idle, BAT1 discharging 10 W.
TEST(Battery, TwoBatteriesGiveASummedSourceAndNoFalseMainsNote) {
  FixtureTree t;
  for (auto [n, st, uw] : {std::tuple{"BAT0", "Unknown", "0"}, {"BAT1", "Discharging", "10000000"}}) {
    const std::string p = std::string("sys/class/power_supply/") + n + "/";
    t.write(p + "type", "Battery\n");
    t.write(p + "present", "1\n");
    t.write(p + "status", std::string(st) + "\n");
    t.write(p + "power_now", std::string(uw) + "\n");
  }
  Discovery d;
  probe_battery(t.root(), d);
  const SourceStatus* s = status(d, "battery:sum");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->available);
  EXPECT_EQ(s->sum_of, (std::vector<std::string>{"battery:BAT0", "battery:BAT1"}));
  PowerSource* sum = source(d, "battery:sum");
  ASSERT_TRUE(sum);
  EXPECT_DOUBLE_EQ(sum->read()->value, 10.0);
  t.write("sys/class/power_supply/BAT0/power_now", "2500000\n");
  EXPECT_DOUBLE_EQ(sum->read()->value, 12.5);
  EXPECT_EQ(status(d, "battery:BAT0")->note.find("on mains"), std::string::npos) << status(d, "battery:BAT0")->note;
  // A part that fails leaves a gap in the sum, never a sum that is too low.
  t.write("sys/class/power_supply/BAT0/power_now", "garbage\n");
  EXPECT_FALSE(sum->read());
  EXPECT_NE(sum->last_error().find("battery:BAT0"), std::string::npos) << sum->last_error();
}

TEST(Battery, GarbageAndImpossibleValuesAreNotReadings) {
  FixtureTree t;
  battery(t, "Discharging");
  t.write(std::string(kBat) + "power_now", "9223372036854775807\n");  // INT64_MAX uW
  Discovery d;
  probe_battery(t.root(), d);
  EXPECT_FALSE(source(d, "battery:BAT0"));
  ASSERT_TRUE(status(d, "battery:BAT0"));
  EXPECT_NE(status(d, "battery:BAT0")->reason.find("implausible"), std::string::npos) << status(d, "battery:BAT0")->reason;

  FixtureTree u;
  battery(u, "Discharging");
  u.write(std::string(kBat) + "power_now", "12500000\n");
  Discovery e;
  probe_battery(u.root(), e);
  PowerSource* b = source(e, "battery:BAT0");
  ASSERT_TRUE(b);
  for (const char* bad : {"123abc\n", "99999999999999999999999\n", "9223372036854775807\n", "\n"}) {
    u.write(std::string(kBat) + "power_now", bad);
    EXPECT_FALSE(b->read()) << bad;
    EXPECT_FALSE(b->last_error().empty()) << bad;
  }
  u.write(std::string(kBat) + "power_now", "12500000\n");
  EXPECT_DOUBLE_EQ(b->read()->value, 12.5);
}
