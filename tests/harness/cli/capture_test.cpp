// `flopwatt capture` end to end: a fixture tree whose package counter a fake
// writer moves is recorded, the recording is replayed under `flopwatt
// measure`, and the energy measured from the replay is the recorded power
// times the time. Every capture under tests/fixtures/ is replayed the same way.
// The replays have no writer (power/replay.h); the recording has one, with
// real-time priority, so this executable runs alone (ALONE in CMakeLists.txt).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/harness/cli_support.h"

namespace fs = std::filesystem;
using flopwatt::testing::run_command_line;
using flopwatt::testing::slurp;
using nlohmann::json;

namespace {

json read_json(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
}

// `measure -- sleep S` on a replayed capture; the run's first measurement.
json measure_replay(const fs::path& capture, const fs::path& out, const std::string& power = "auto",
                    const std::string& seconds = "1") {
  const auto r = run_command_line(std::string(FLOPWATT_BINARY) + " measure --no-store --power " + power +
                                  " --sample-period 0.01 --sysfs-root " + capture.string() + " --out " +
                                  out.string() + " -- sleep " + seconds);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("replaying the capture " + capture.string()), std::string::npos) << r.err;
  if (r.code != 0) return json();
  return read_json(out / "run.json")["measurements"][0];
}

// The power the capture recorded for one energy counter: first to last row.
double recorded_watts(const fs::path& capture, const std::string& counter) {
  std::istringstream in(slurp(capture / "timeline.csv"));
  std::string line;
  double t0 = -1, v0 = 0, t1 = 0, v1 = 0;
  while (std::getline(in, line)) {
    const auto a = line.find(','), b = line.find(',', a + 1);
    if (b == std::string::npos || line.substr(a + 1, b - a - 1) != counter) continue;
    const double t = std::stod(line.substr(0, a)), v = std::stod(line.substr(b + 1));
    if (t0 < 0) t0 = t, v0 = v;
    t1 = t, v1 = v;
  }
  return t1 > t0 ? (v1 - v0) * 1e-6 / (t1 - t0) : 0;
}

}  // namespace

#ifdef FLOPWATT_FAKE_POWER
TEST(Capture, ARecordedPackageCounterReplaysAtItsPower) {
  const fs::path base = flopwatt::testing::temp_dir("capture", "pkg");
  fs::copy(fs::path(FLOPWATT_TEST_FIXTURES) / "power" / "laptop", base / "root", fs::copy_options::recursive);
  const fs::path cap = base / "cap";
  // The capture starts once the writer has moved the counter, and the writer
  // is stopped only after it: however slowly a loaded machine starts either
  // program, the whole recording sees the counter move (a fixed 0.2 s head
  // start and a 3 s writer could leave flat stretches in it). Braced, so the
  // capture's output, not only the last command's, is captured.
  const std::string counter = "sys/class/powercap/intel-rapl:0/energy_uj";
  const std::string file = (base / "root" / counter).string();
  const std::string writer = std::string(FLOPWATT_FAKE_POWER) + " " + (base / "root").string() + " 600 intel-rapl:0=15";
  const std::string until_moving = "v=$(cat " + file + "); n=0; while [ \"$(cat " + file +
                                   ")\" = \"$v\" ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1)); done";
  const auto r = run_command_line("{ " + writer + " & f=$!; " + until_moving + "; " + FLOPWATT_BINARY +
                                  " capture --no-load --seconds 2 --out " + cap.string() + " --sysfs-root " +
                                  (base / "root").string() + "; s=$?; kill $f; wait $f; exit $s; }");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("left out"), std::string::npos) << r.out;
  const double watts = recorded_watts(cap, counter);
  ASSERT_NEAR(watts, 15.0, 1.5) << slurp(cap / "timeline.csv");
  // The capture is a tree like any fixture: the zone's name came along.
  EXPECT_EQ(slurp(cap / "sys/class/powercap/intel-rapl:0/name"), "package-0\n");
  // Replayed for longer than it was recorded: the counter goes on moving.
  const json m = measure_replay(cap, base / "run", "auto", "2.5");
  ASSERT_TRUE(m.contains("energy")) << m.dump();
  bool found = false;
  for (const auto& [id, e] : m["energy"].items())
    if (id.find("package") != std::string::npos && id.find("mmio") == std::string::npos) {
      found = true;
      // The replay computes each read from the timeline, so what is left is
      // the recording's own: a row whose read the writer's or the capture's
      // scheduling delayed bends the line near it. Within 10%.
      EXPECT_NEAR(e["avg_power_w"].get<double>(), watts, 0.1 * watts) << id << " " << e.dump();
    }
  EXPECT_TRUE(found) << m["energy"].dump();
  fs::remove_all(base);
}
#endif

TEST(Capture, BadOptionsAreOneLineErrorsWithExit2) {
  const fs::path base = flopwatt::testing::temp_dir("capture", "bad");
  std::ofstream(base / "taken") << "x\n";
  auto r = run_command_line(std::string(FLOPWATT_BINARY) + " capture --seconds 1 --out " + base.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--out " + base.string() + ": already exists and is not empty; fix:"), std::string::npos)
      << r.err;
  r = run_command_line(std::string(FLOPWATT_BINARY) + " capture --seconds -1 --out " + (base / "new").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--seconds: must be between"), std::string::npos) << r.err;
  // A replay whose timeline is broken names the file and line.
  fs::create_directories(base / "cap");
  std::ofstream(base / "cap" / "capture.json") << "{\"duration_s\": 1}\n";
  std::ofstream(base / "cap" / "timeline.csv") << "t_s,path,value\nsoon,sys/class/powercap/intel-rapl:0/energy_uj,1\n";
  r = run_command_line(std::string(FLOPWATT_BINARY) + " measure --no-store --sysfs-root " + (base / "cap").string() +
                       " --out " + (base / "run").string() + " -- true");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find((base / "cap" / "timeline.csv").string() + " line 2: field t_s 'soon'"), std::string::npos)
      << r.err;
  fs::remove_all(base);
}

// Each capture contributed under tests/fixtures/power/ replays as a moving
// machine: `measure` gets a headline, and its power is the one recorded in the
// capture's timeline for that source's counter or gauge.
TEST(Capture, EveryCaptureUnderFixturesReplays) {
  const fs::path fixtures = fs::path(FLOPWATT_TEST_FIXTURES) / "power";
  int replayed = 0;
  for (const auto& e : fs::directory_iterator(fixtures)) {
    if (!fs::exists(e.path() / "timeline.csv")) continue;
    const std::string name = e.path().filename().string();
    SCOPED_TRACE(name);
    EXPECT_TRUE(fs::exists(fixtures / (name + ".md"))) << "a capture says what machine it comes from";
    const fs::path base = flopwatt::testing::temp_dir("capture", "all-" + name);
    const json m = measure_replay(e.path(), base / "run");
    ASSERT_TRUE(m.contains("headline_source")) << m.dump();
    ASSERT_TRUE(m["headline_source"].is_string()) << m.dump();
    const std::string h = m["headline_source"];
    const double w = m["energy"][h]["avg_power_w"].get<double>();
    // The power the headline's file recorded: a battery's power_now, or the
    // first powercap zone's counter.
    double want = 0;
    const std::string bat = "battery:";
    if (h.rfind(bat, 0) == 0) {
      std::istringstream in(slurp(e.path() / "timeline.csv"));
      std::string line, key = "sys/class/power_supply/" + h.substr(bat.size()) + "/power_now,";
      double sum = 0;
      int n = 0;
      while (std::getline(in, line))
        if (auto at = line.find(key); at != std::string::npos) sum += std::stod(line.substr(at + key.size())) * 1e-6, ++n;
      want = n ? sum / n : 0;
    } else {
      want = recorded_watts(e.path(), "sys/class/powercap/intel-rapl:0/energy_uj");
    }
    EXPECT_NEAR(w, want, 0.1 * want) << h << " " << m["energy"].dump();
    ++replayed;
    fs::remove_all(base);
  }
  EXPECT_GE(replayed, 1) << "no capture under " << fixtures;
}
