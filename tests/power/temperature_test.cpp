#include "power/temperature.h"

#include <gtest/gtest.h>

#include "fixture_tree.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FixtureTree;

TEST(Temperature, HwmonAndThermalZones) {
  FixtureTree t;
  t.write("sys/class/hwmon/hwmon1/name", "k10temp\n");
  t.write("sys/class/hwmon/hwmon1/temp1_input", "55250\n");
  t.write("sys/class/hwmon/hwmon1/temp1_label", "Tctl\n");
  t.write("sys/class/thermal/thermal_zone0/type", "acpitz\n");
  t.write("sys/class/thermal/thermal_zone0/temp", "40000\n");
  t.write("sys/class/thermal/thermal_zone1/type", "iwlwifi_1\n");  // temp unreadable: skipped
  t.write("sys/class/thermal/cooling_device0/type", "Processor\n");
  auto v = read_temperatures(t.root());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].id, "hwmon:k10temp:Tctl");
  EXPECT_DOUBLE_EQ(v[0].celsius, 55.25);
  EXPECT_EQ(v[1].id, "thermal:thermal_zone0:acpitz");
  EXPECT_DOUBLE_EQ(v[1].celsius, 40.0);
}

TEST(Temperature, NoneIsEmpty) {
  FixtureTree t;
  EXPECT_TRUE(read_temperatures(t.root()).empty());
}
