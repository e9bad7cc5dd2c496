// A capture played back: counters move between their rows and go on after
// the last one, gauges step, wraps stay wraps, and a malformed timeline is
// named by file, line and field.
#include "power/replay.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "power/config_error.h"
#include "sysfs/files.h"
#include "tests/power/fixture_tree.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FixtureTree;

namespace {

const std::string kPkg = "sys/class/powercap/intel-rapl:0/energy_uj";
const std::string kBat = "sys/class/power_supply/BAT0/";

// 2 s at 10 W on the package (wrapping once at 16 J), the battery's power
// stepping from 12 W to 8 W at 1 s and its energy_now down 10 mWh at 1.5 s.
void write_capture(const FixtureTree& t) {
  t.write(kPkg, "10000000\n");
  t.write("sys/class/powercap/intel-rapl:0/max_energy_range_uj", "15999999\n");
  t.write(kBat + "power_now", "12000000\n");
  t.write(kBat + "energy_now", "40000000\n");
  t.write(kBat + "status", "Discharging\n");
  t.write("capture.json", "{\n  \"format\": \"flopwatt-capture 1\",\n  \"duration_s\": 2.0\n}\n");
  t.write("timeline.csv",
          "t_s,path,value\n"
          "0.0000," + kPkg + ",10000000\n"
          "0.0000," + kBat + "power_now,12000000\n"
          "0.0000," + kBat + "energy_now,40000000\n"
          "0.0000," + kBat + "status,Discharging\n"
          "1.0000," + kPkg + ",4000000\n"  // wrapped: 10 J + 10 J - 16 J
          "1.0000," + kBat + "power_now,8000000\n"
          "1.5000," + kBat + "energy_now,39990000\n"
          "2.0000," + kPkg + ",14000000\n");
}

}  // namespace

TEST(Replay, ValuesBetweenAndAfterTheRows) {
  FixtureTree t;
  write_capture(t);
  const Timeline tl = load_timeline(t.root());
  EXPECT_DOUBLE_EQ(tl.duration_s, 2.0);
  const TimelineSeries& pkg = tl.series.at(kPkg);
  EXPECT_EQ(pkg.modulus, 16000000u);
  EXPECT_EQ(value_at(tl, pkg, 0.0), "10000000");
  EXPECT_EQ(value_at(tl, pkg, 0.5), "15000000");  // 10 W between the rows, not a jump at the next
  EXPECT_EQ(value_at(tl, pkg, 0.7), "1000000");   // past the wrap, as the counter itself wraps
  EXPECT_EQ(value_at(tl, pkg, 1.0), "4000000");
  // The second pass goes on at 10 W: 35 J at 2.5 s, modulo 16 J.
  EXPECT_EQ(value_at(tl, pkg, 2.5), "3000000");
  const TimelineSeries& pw = tl.series.at(kBat + "power_now");
  EXPECT_EQ(value_at(tl, pw, 0.99), "12000000");
  EXPECT_EQ(value_at(tl, pw, 1.2), "8000000");
  EXPECT_EQ(value_at(tl, pw, 2.2), "12000000");  // a gauge repeats
  const TimelineSeries& en = tl.series.at(kBat + "energy_now");
  EXPECT_EQ(value_at(tl, en, 1.2), "40000000");  // stepped, never interpolated
  EXPECT_EQ(value_at(tl, en, 1.6), "39990000");
  EXPECT_EQ(value_at(tl, en, 3.6), "39980000");  // and drains on in the second pass
  EXPECT_EQ(value_at(tl, tl.series.at(kBat + "status"), 3.0), "Discharging");
}

TEST(Replay, TheTemporaryRootMovesAndIsRemovedAfterwards) {
  FixtureTree t;
  write_capture(t);
  std::string root;
  {
    Replay r(t.root());
    root = r.root();
    EXPECT_NE(root, t.root());
    EXPECT_EQ(flopwatt::sysfs::read_trimmed(root + "/" + kBat + "status").value_or(""), "Discharging");
    const auto a = flopwatt::sysfs::read_int(root + "/" + kPkg).value_or(-1);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const auto b = flopwatt::sysfs::read_int(root + "/" + kPkg).value_or(-1);
    EXPECT_NEAR(double(b - a) * 1e-6 / 0.2, 10.0, 2.0) << a << " -> " << b;
    // The capture itself is never written.
    EXPECT_EQ(flopwatt::sysfs::read_trimmed(t.path(kPkg)).value_or(""), "10000000");
  }
  EXPECT_FALSE(flopwatt::sysfs::path_exists(root));
}

TEST(Replay, AMalformedRowNamesFileLineAndField) {
  FixtureTree t;
  write_capture(t);
  t.write("timeline.csv", "t_s,path,value\n0.0," + kPkg + ",100\n0.1," + kPkg + ",12.5e3\n");
  try {
    load_timeline(t.root());
    FAIL() << "a counter value 12.5e3 was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.where(), t.path("timeline.csv") + " line 3");
    EXPECT_NE(e.problem().find("field value '12.5e3'"), std::string::npos) << e.what();
    EXPECT_FALSE(e.fix().empty());
  }
  t.write("timeline.csv", "t_s,path,value\n0.0,../../etc/passwd,1\n");
  EXPECT_THROW(load_timeline(t.root()), ConfigError);
  t.write("timeline.csv", "time,path,value\n");
  EXPECT_THROW(load_timeline(t.root()), ConfigError);
}

TEST(Replay, OnlyADirectoryWithATimelineIsReplayed) {
  FixtureTree t;
  t.write(kPkg, "1\n");
  EXPECT_EQ(replay_if_capture(t.root(), nullptr), t.root());
  EXPECT_EQ(replay_if_capture(std::string(FLOPWATT_TEST_FIXTURES) + "/power/laptop", nullptr),
            std::string(FLOPWATT_TEST_FIXTURES) + "/power/laptop");
}
