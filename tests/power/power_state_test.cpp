#include "power/power_state.h"

#include <gtest/gtest.h>

#include "fixture_tree.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FixtureTree;

TEST(PowerState, NothingAtAll) {
  FixtureTree t;
  EXPECT_FALSE(read_power_state(t.root()));
}

TEST(PowerState, AcOnlineFlips) {
  FixtureTree t;
  t.write("sys/class/power_supply/AC/type", "Mains\n");
  t.write("sys/class/power_supply/AC/online", "1\n");
  t.write("sys/class/power_supply/BAT0/type", "Battery\n");
  t.write("sys/class/power_supply/BAT0/status", "Charging\n");
  t.write("sys/class/power_supply/BAT0/capacity", "64\n");
  auto a = read_power_state(t.root());
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->ac_online);
  EXPECT_TRUE(*a->ac_online);
  EXPECT_FALSE(a->ac_inferred);
  ASSERT_EQ(a->batteries.size(), 1u);
  EXPECT_EQ(a->batteries[0].status, BatteryStatus::Charging);
  EXPECT_DOUBLE_EQ(*a->battery_percent, 64.0);

  t.write("sys/class/power_supply/AC/online", "0\n");
  t.write("sys/class/power_supply/BAT0/status", "Discharging\n");
  auto b = read_power_state(t.root());
  ASSERT_TRUE(b->ac_online);
  EXPECT_FALSE(*b->ac_online);
  EXPECT_EQ(b->batteries[0].status, BatteryStatus::Discharging);
}

TEST(PowerState, UsbCAdapterCountsAsMains) {
  FixtureTree t;
  t.write("sys/class/power_supply/ucsi-source-psy-USBC000:001/type", "USB\n");
  t.write("sys/class/power_supply/ucsi-source-psy-USBC000:001/online", "1\n");
  t.write("sys/class/power_supply/ADP1/type", "Mains\n");
  t.write("sys/class/power_supply/ADP1/online", "0\n");
  auto s = read_power_state(t.root());
  ASSERT_TRUE(s && s->ac_online);
  EXPECT_TRUE(*s->ac_online);
  EXPECT_FALSE(s->battery_percent);
}

TEST(PowerState, TwoBatteriesWeightedByEnergy) {
  FixtureTree t;
  for (auto [n, now, full] : {std::tuple{"BAT0", "20000000", "40000000"}, {"BAT1", "20000000", "20000000"}}) {
    const std::string p = std::string("sys/class/power_supply/") + n + "/";
    t.write(p + "type", "Battery\n");
    t.write(p + "status", "Discharging\n");
    t.write(p + "energy_now", std::string(now) + "\n");
    t.write(p + "energy_full", std::string(full) + "\n");
  }
  auto s = read_power_state(t.root());
  ASSERT_TRUE(s);
  EXPECT_NEAR(*s->battery_percent, 100.0 * 40 / 60, 1e-9);
  EXPECT_NEAR(*s->batteries[0].percent, 50.0, 1e-9);
  // No adapter entry: a discharging battery means no mains, and we say it was inferred.
  ASSERT_TRUE(s->ac_online);
  EXPECT_FALSE(*s->ac_online);
  EXPECT_TRUE(s->ac_inferred);
}

TEST(PowerState, StatusStrings) {
  EXPECT_EQ(parse_battery_status("Not charging"), BatteryStatus::NotCharging);
  EXPECT_EQ(parse_battery_status("Full"), BatteryStatus::Full);
  EXPECT_EQ(parse_battery_status("weird"), BatteryStatus::Unknown);
  EXPECT_STREQ(to_string(BatteryStatus::Discharging), "discharging");
}

// A desktop with no battery whose only power_supply entries are its USB-C
// ports (drivers/usb/typec/ucsi/psy.c registers them, type USB, online while
// a partner supplies power): nothing plugged in is not "on battery".
TEST(PowerState, UsbPortsWithoutABatteryAreNeverOnBattery) {
  FixtureTree t;
  for (const char* port : {"ucsi-source-psy-USBC000:001", "ucsi-source-psy-USBC000:002"}) {
    const std::string p = std::string("sys/class/power_supply/") + port + "/";
    t.write(p + "type", "USB\n");
    t.write(p + "scope", "Unknown\n");
    t.write(p + "online", "0\n");
    t.write(p + "usb_type", "[C] PD PD_PPS\n");
  }
  auto s = read_power_state(t.root());
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->ac_online.has_value()) << "an offline USB port on a machine without a battery";
  EXPECT_NE(s->ac_note.find("never on battery"), std::string::npos) << s->ac_note;
  EXPECT_TRUE(s->batteries.empty());
  // A PD source plugged into one of them: on mains.
  t.write("sys/class/power_supply/ucsi-source-psy-USBC000:001/online", "1\n");
  auto on = read_power_state(t.root());
  ASSERT_TRUE(on && on->ac_online);
  EXPECT_TRUE(*on->ac_online);
  // A peripheral's battery (scope Device) is no system battery either.
  t.write("sys/class/power_supply/ucsi-source-psy-USBC000:001/online", "0\n");
  t.write("sys/class/power_supply/hidpp_battery_0/type", "Battery\n");
  t.write("sys/class/power_supply/hidpp_battery_0/scope", "Device\n");
  t.write("sys/class/power_supply/hidpp_battery_0/status", "Discharging\n");
  auto mouse = read_power_state(t.root());
  ASSERT_TRUE(mouse);
  EXPECT_FALSE(mouse->ac_online.has_value());
}
