#include "power/supply_track.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fixture_tree.h"
#include "power/clock.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FixtureTree;

namespace {

void battery(const FixtureTree& t, const std::string& n, const std::string& status) {
  t.write("sys/class/power_supply/" + n + "/type", "Battery\n");
  t.write("sys/class/power_supply/" + n + "/present", "1\n");
  t.write("sys/class/power_supply/" + n + "/status", status + "\n");
}

}  // namespace

// sysfs-class-power: "Not charging" needs the charger attached; without an
// adapter entry it still means mains, as Charging does.
TEST(SupplyTrack, NotChargingAndChargingWithoutAdapterMeanMains) {
  for (const char* st : {"Not charging", "Charging", "Full"}) {
    FixtureTree t;
    battery(t, "BAT0", st);
    EXPECT_EQ(supply_of(read_power_state(t.root())), Supply::Mains) << st;
  }
  FixtureTree t;
  battery(t, "BAT0", "Discharging");
  EXPECT_EQ(supply_of(read_power_state(t.root())), Supply::Battery);
}

// Two batteries, BAT0 idle and BAT1 discharging, no adapter: on battery.
TEST(SupplyTrack, IdleBatteryNextToADischargingOneIsNotMains) {
  FixtureTree t;
  battery(t, "BAT0", "Not charging");
  battery(t, "BAT1", "Discharging");
  EXPECT_EQ(supply_of(read_power_state(t.root())), Supply::Battery);
}

TEST(SupplyTrack, UnplugIsRecordedWithItsTimeAndFlagsOverlappingWindows) {
  FixtureTree t;
  t.write("sys/class/power_supply/AC/type", "Mains\n");
  t.write("sys/class/power_supply/AC/online", "1\n");
  battery(t, "BAT0", "Charging");
  SupplyTrack tr;
  EXPECT_TRUE(tr.poll(t.root(), 1000).empty());
  EXPECT_TRUE(tr.poll(t.root(), 2000).empty());
  t.write("sys/class/power_supply/AC/online", "0\n");
  t.write("sys/class/power_supply/BAT0/status", "Discharging\n");
  auto ch = tr.poll(t.root(), 3000);
  ASSERT_EQ(ch.size(), 2u);
  EXPECT_EQ(ch[0].what, "supply");
  EXPECT_EQ(ch[0].old_value, "mains");
  EXPECT_EQ(ch[0].new_value, "battery");
  EXPECT_EQ(ch[0].after_ns, 2000);
  EXPECT_EQ(ch[0].t_ns, 3000);
  EXPECT_EQ(ch[1].what, "battery:BAT0");
  EXPECT_EQ(ch[1].old_value, "charging");
  EXPECT_EQ(ch[1].new_value, "discharging");
  tr.poll(t.root(), 4000);
  EXPECT_EQ(tr.changes().size(), 2u);
  EXPECT_EQ(*tr.first_supply(), Supply::Mains);
  EXPECT_EQ(*tr.last_supply(), Supply::Battery);
  EXPECT_EQ(tr.polls(), 4);

  EXPECT_FALSE(tr.changed_during(1000, 2000));
  EXPECT_TRUE(tr.changed_during(2500, 2600));  // inside (2000, 3000]
  EXPECT_TRUE(tr.changed_during(1500, 3500));
  EXPECT_FALSE(tr.changed_during(3000, 4000));
  EXPECT_EQ(tr.battery_state_over("BAT0", 1000, 2000), ChargeState::Charging);
  EXPECT_EQ(tr.battery_state_over("BAT0", 1500, 3500), ChargeState::Changed);
  EXPECT_EQ(tr.battery_state_over("BAT0", 3000, 4000), ChargeState::Discharging);
  EXPECT_EQ(tr.battery_state_over("BAT9", 3000, 4000), ChargeState::Unknown);
}

TEST(SupplyTrack, SummedBatteriesDischargeOnlyWhenNoneCharges) {
  FixtureTree t;
  battery(t, "BAT0", "Unknown");
  battery(t, "BAT1", "Discharging");
  SupplyTrack tr;
  tr.poll(t.root(), 10);
  EXPECT_EQ(tr.batteries_state_over({"BAT0", "BAT1"}, 10, 20), ChargeState::Discharging);
  EXPECT_EQ(tr.battery_state_over("BAT0", 10, 20), ChargeState::Unknown);
  t.write("sys/class/power_supply/BAT0/status", "Charging\n");
  tr.poll(t.root(), 30);
  EXPECT_EQ(tr.batteries_state_over({"BAT0", "BAT1"}, 40, 50), ChargeState::Charging);
}

TEST(SupplyTrack, NoSupplyAtAllIsUnknownAndNeverChanges) {
  FixtureTree t;
  SupplyTrack tr;
  tr.poll(t.root(), 1);
  tr.poll(t.root(), 2);
  EXPECT_EQ(*tr.first_supply(), Supply::Unknown);
  EXPECT_TRUE(tr.changes().empty());
}

TEST(SupplyTrack, UnknownBatteriesStayUnknown) {
  FixtureTree t;
  battery(t, "BAT0", "Unknown");
  SupplyTrack tr;
  tr.poll(t.root(), 10);
  EXPECT_EQ(tr.batteries_state_over({"BAT0"}, 10, 20), ChargeState::Unknown);
}

TEST(SupplyMonitor, SeesAnUnplugDuringARun) {
  FixtureTree t;
  t.write("sys/class/power_supply/AC/type", "Mains\n");
  t.write("sys/class/power_supply/AC/online", "1\n");
  battery(t, "BAT0", "Charging");
  SupplyMonitor m(t.root(), 0.01);
  m.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  t.write("sys/class/power_supply/AC/online", "0\n");
  t.write("sys/class/power_supply/BAT0/status", "Discharging\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  m.stop();
  const SupplyTrack tr = m.track();
  EXPECT_EQ(*tr.first_supply(), Supply::Mains);
  EXPECT_EQ(*tr.last_supply(), Supply::Battery);
  ASSERT_GE(tr.changes().size(), 1u);
  EXPECT_EQ(tr.changes()[0].what, "supply");
  EXPECT_LE(tr.changes()[0].after_ns, tr.changes()[0].t_ns);
  EXPECT_GE(tr.polls(), 5);
}

// A window's end needs a poll near it; windows that end before the last poll,
// or at most SupplyMonitor::kReuseNs after it, share it, and one that ends
// later gets a fresh read, which sees an unplug that happened since
// (sysfs-class-power: the adapter's `online` goes 1 -> 0 and the battery's
// `status` to "Discharging", as in the test above).
TEST(SupplyMonitor, CoverPollsOnlyWhenNoRecentPollIsThere) {
  FixtureTree t;
  t.write("sys/class/power_supply/AC/type", "Mains\n");
  t.write("sys/class/power_supply/AC/online", "1\n");
  battery(t, "BAT0", "Charging");
  SupplyMonitor m(t.root());  // no thread: only cover() polls
  const std::int64_t start = monotonic_ns();
  m.cover(start);
  const std::int64_t first = m.track().last_poll_ns();
  ASSERT_GE(first, start);
  ASSERT_EQ(m.track().polls(), 1);
  m.cover(first - 1000);
  m.cover(first);
  m.cover(first + SupplyMonitor::kReuseNs);
  EXPECT_EQ(m.track().polls(), 1) << "a window ending before or just after the last poll is covered by it";

  t.write("sys/class/power_supply/AC/online", "0\n");
  t.write("sys/class/power_supply/BAT0/status", "Discharging\n");
  const std::int64_t end = first + SupplyMonitor::kReuseNs + 1;
  while (monotonic_ns() < end) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  m.cover(end);
  const SupplyTrack tr = m.track();
  EXPECT_EQ(tr.polls(), 2);
  EXPECT_GE(tr.last_poll_ns(), end);
  EXPECT_TRUE(tr.changed_during(first, end));
  EXPECT_EQ(*tr.last_supply(), Supply::Battery);
  m.cover(end);
  EXPECT_EQ(m.track().polls(), 2);
}
