// A capture played back: counters move between their rows and go on after
// the last one, gauges step, wraps stay wraps, a read gets the value of the
// moment it is made with nothing written anywhere, and a malformed timeline is
// named by file, line and field. No test here has a writer: they run beside
// any load.
#include "power/replay.h"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "power/clock.h"
#include "power/config_error.h"
#include "sysfs/files.h"
#include "tests/power/fixture_tree.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FixtureTree;
namespace fs = std::filesystem;

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

namespace {

// The unwrapped package counter of write_capture() behind a value read at
// recording time `t` seconds: 10 J + 10 W x t, the read value being that
// modulo 16 J.
double unwrapped_pkg_uj(std::uint64_t read, double t) {
  const double want = 10e6 + 10e6 * t;
  return double(read) + 16e6 * std::round((want - double(read)) / 16e6);
}

}  // namespace

TEST(Replay, AReadGetsTheRecordingAtTheReadersClockAndNothingIsWritten) {
  FixtureTree t;
  write_capture(t);
  const auto files_before = std::distance(fs::recursive_directory_iterator(t.root()), {});
  {
    // Started 0.3 s ago: the reads land inside the recording's first second.
    Replay r(t.root(), flopwatt::power::monotonic_ns() - 300'000'000);
    r.install();
    EXPECT_EQ(r.root(), t.root());  // the capture itself is the root
    for (int i = 0; i < 20; ++i) {
      // Bracketed by the replay's clock on both sides of the read, so the
      // check holds however late the scheduler runs this thread.
      const double before = r.seconds_at(flopwatt::power::monotonic_ns());
      std::uint64_t v = 0;
      int err = 0;
      ASSERT_TRUE(flopwatt::sysfs::read_u64_file(t.path(kPkg).c_str(), v, err)) << err;
      const double after = r.seconds_at(flopwatt::power::monotonic_ns());
      const double at = (unwrapped_pkg_uj(v, before) - 10e6) / 10e6;  // the recording time the value belongs to
      EXPECT_GE(at, before - 1e-6) << v;
      EXPECT_LE(at, after + 1e-6) << v;
      // A gauge through read_text: its row at that time.
      const std::string pw = flopwatt::sysfs::read_trimmed(t.path(kBat + "power_now")).value_or("");
      const double late = r.seconds_at(flopwatt::power::monotonic_ns());
      EXPECT_TRUE(pw == value_at(r.timeline(), r.timeline().series.at(kBat + "power_now"), after) ||
                  pw == value_at(r.timeline(), r.timeline().series.at(kBat + "power_now"), late))
          << pw << " at " << after;
      EXPECT_EQ(flopwatt::sysfs::read_trimmed(t.path(kBat + "status")).value_or(""), "Discharging");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // A path spelled with a doubled slash is the same file.
    EXPECT_TRUE(flopwatt::sysfs::read_int(t.root() + "//" + kPkg).has_value());
    EXPECT_NE(flopwatt::sysfs::read_int(t.root() + "//" + kPkg).value_or(10000000), 10000000);
    // Files outside the timeline are the tree's.
    EXPECT_EQ(flopwatt::sysfs::read_int(t.path("sys/class/powercap/intel-rapl:0/max_energy_range_uj")).value_or(0),
              15999999);
    // Nothing was written: the capture's file holds its first value, and no file came or went.
    std::ifstream f(t.path(kPkg));
    std::string on_disk;
    std::getline(f, on_disk);
    EXPECT_EQ(on_disk, "10000000");
    EXPECT_EQ(std::distance(fs::recursive_directory_iterator(t.root()), {}), files_before);
  }
  // Gone with the replay: reads are the files' again.
  EXPECT_EQ(flopwatt::sysfs::overlay(), nullptr);
  EXPECT_EQ(flopwatt::sysfs::read_int(t.path(kPkg)).value_or(-1), 10000000);
}

// A campaign's `flopwatt run` children replay the moment their parent is at,
// not the capture from its start again; another capture's start is ignored.
TEST(Replay, ChildProcessesShareTheParentsStart) {
  FixtureTree t;
  write_capture(t);
  ::unsetenv(kReplayStartEnv);
  const std::string root = replay_if_capture(t.root(), nullptr);
  EXPECT_EQ(root, t.root());
  ASSERT_NE(flopwatt::sysfs::overlay(), nullptr);
  const char* env = std::getenv(kReplayStartEnv);
  ASSERT_NE(env, nullptr);
  const std::string first = env;
  EXPECT_NE(first.find(' ' + fs::weakly_canonical(t.root()).string()), std::string::npos) << first;
  // What a child sees: the same variable, the same start.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  replay_if_capture(t.root(), nullptr);
  EXPECT_EQ(std::string(std::getenv(kReplayStartEnv)), first);
  FixtureTree other;
  write_capture(other);
  ::setenv(kReplayStartEnv, "1 /not/this/capture", 1);
  replay_if_capture(other.root(), nullptr);
  EXPECT_NE(std::string(std::getenv(kReplayStartEnv)), "1 /not/this/capture");
  flopwatt::sysfs::set_overlay(nullptr);
  ::unsetenv(kReplayStartEnv);
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
