// What every `run` command does around its workload: the header written before
// the first measurement (context with the supply state of the fixture machine,
// the command's extra context), the closing write, the exit status, and a
// second run into the same directory.
#include "harness/run/run_setup.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "workloads/error.h"

namespace flopwatt {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

std::string slurp(std::FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[512];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  return s;
}

class RunSetupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("flopwatt_run_setup_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    o_.out = (dir_ / "run").string();
    o_.power.power = "none";
    o_.power.idle_s = 0;
    o_.power.sysfs_root = std::string(FLOPWATT_TEST_FIXTURES) + "/power/charging-on-mains";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  RunCommonOptions o_;
};

TEST_F(RunSetupTest, TheHeaderIsOnDiskBeforeTheFirstMeasurement) {
  OpenRun r = open_run(o_, {}, {{"gemm", {{"shapes", "square"}}}});
  const auto j = read_json(dir_ / "run" / "run.json");
  EXPECT_FALSE(j["complete"].get<bool>());
  EXPECT_EQ(j["measurements"].size(), 0u);
  EXPECT_EQ(j["run_id"], r.session->run().run_id);
  const auto& c = j["context"];
  EXPECT_EQ(c["gemm"]["shapes"], "square");
  // The fixture laptop: adapter online, BAT0 charging (tests/fixtures/power/charging-on-mains.md).
  EXPECT_EQ(c["ac_online"], true);
  EXPECT_EQ(c["ac_inferred_from_battery_status"], false);
  ASSERT_EQ(c["batteries"].size(), 1u);
  EXPECT_EQ(c["batteries"][0]["name"], "BAT0");
  EXPECT_EQ(c["batteries"][0]["status"], "charging");  // flopwatt's spelling of the kernel's "Charging"
  EXPECT_TRUE(c["temperatures_start"].is_array());
  EXPECT_FALSE(c.contains("headline"));  // --power none: no source, no headline rule
  EXPECT_EQ(r.root, o_.power.sysfs_root);
  close_run(r, true);
}

TEST_F(RunSetupTest, EndRunWritesTheFinalReportAndTheExitStatus) {
  std::FILE* out = std::tmpfile();
  {
    OpenRun r = start_run(o_, {}, {}, out);
    EXPECT_EQ(end_run(r, true, out, RunEnding::kReportPath), 0);
  }
  const std::string text = slurp(out);
  EXPECT_NE(text.find("-> " + o_.out), std::string::npos) << text;
  EXPECT_NE(text.find("report: " + o_.out + "/run.json"), std::string::npos) << text;
  const auto j = read_json(dir_ / "run" / "run.json");
  EXPECT_TRUE(j["complete"].get<bool>());
  EXPECT_TRUE(j["context"]["temperatures_end"].is_array());

  // An interrupted run keeps what it has and says so with 130.
  o_.out = (dir_ / "partial").string();
  OpenRun r = open_run(o_, {}, {});
  EXPECT_EQ(end_run(r, false, out, RunEnding::kReportPath), 130);
  EXPECT_FALSE(read_json(dir_ / "partial" / "run.json")["complete"].get<bool>());
  std::fclose(out);
}

TEST_F(RunSetupTest, ADirectoryHoldingARunIsKeptUnlessOverwriteIsGiven) {
  { OpenRun r = open_run(o_, {}, {}); close_run(r, true); }
  const std::string first = read_json(dir_ / "run" / "run.json")["run_id"];
  EXPECT_THROW(open_run(o_, {}, {}), InputError);
  EXPECT_EQ(read_json(dir_ / "run" / "run.json")["run_id"], first);
  o_.overwrite = true;
  OpenRun r = open_run(o_, {}, {});
  EXPECT_NE(read_json(dir_ / "run" / "run.json")["run_id"], first);
  close_run(r, true);
}

TEST_F(RunSetupTest, AnUnplugDuringTheRunIsRecordedAndItsWindowFlagged) {
  // A copy of the charging laptop whose adapter the test pulls mid-run.
  const fs::path root = dir_ / "machine";
  fs::copy(o_.power.sysfs_root, root, fs::copy_options::recursive);
  o_.power.sysfs_root = root.string();
  OpenRun r = open_run(o_, {}, {});
  ASSERT_TRUE(r.supply);
  auto measurement = [&](std::int64_t t0, std::int64_t t1) {
    Measurement m;
    m.workload = "gemm";
    m.op = "w";
    m.backend = "cpu:test";
    m.window_ns = {{t0, t1}};
    r.session->add(m);
  };
  const std::int64_t a0 = EnergyMeter::now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  measurement(a0, EnergyMeter::now_ns());
  // A poll between the windows (the monitor's own, once a second, in a run):
  // without it the change could have happened in either window, and both are flagged.
  r.supply->poll_now();
  const std::int64_t b0 = EnergyMeter::now_ns();
  // As the kernel reports an unplug: the adapter offline, the battery discharging
  // (Documentation/ABI/testing/sysfs-class-power: online, status).
  std::ofstream(root / "sys/class/power_supply/AC/online") << "0\n";
  std::ofstream(root / "sys/class/power_supply/BAT0/status") << "Discharging\n";
  r.supply->poll_now();
  measurement(b0, EnergyMeter::now_ns());
  close_run(r, true);
  const auto j = read_json(dir_ / "run" / "run.json");
  EXPECT_EQ(j["measurements"][0]["supply_changed"], false);
  EXPECT_EQ(j["measurements"][1]["supply_changed"], true);
  const auto& c = j["context"];
  EXPECT_EQ(c["ac_online"], true);  // the start
  EXPECT_EQ(c["supply_end"]["ac_online"], false);
  bool supply = false;
  for (const auto& ch : c["supply_changes"]) supply = supply || (ch["what"] == "supply" && ch["to"] == "battery");
  EXPECT_TRUE(supply) << c["supply_changes"].dump();
}

// On battery with the battery gauge as the energy source, a charger plugged in
// between two windows: the first keeps its FLOP/J; the second, wholly after the
// plug-in, does not overlap the change but its battery reads the power going
// in (Documentation/ABI/testing/sysfs-class-power, power_now while
// "Charging"), so its battery figures lose FLOP/J and say why.
TEST_F(RunSetupTest, ABatteryPluggedInBeforeAWindowGivesItNoFlopPerJoule) {
  const fs::path root = dir_ / "machine";
  fs::copy(std::string(FLOPWATT_TEST_FIXTURES) + "/power/laptop", root, fs::copy_options::recursive);
  o_.power.sysfs_root = root.string();
  o_.power.power = "battery:BAT0";
  OpenRun r = open_run(o_, {}, {});
  ASSERT_TRUE(r.supply);
  ASSERT_EQ(r.meter->expected_headline(), "battery:BAT0");
  auto measurement = [&](std::int64_t t0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    const std::int64_t t1 = EnergyMeter::now_ns();
    Measurement m;
    m.workload = "gemm";
    m.op = "w";
    m.backend = "cpu:test";
    m.flop = 1e9;
    m.window_ns = {{t0, t1}};
    m.energy = r.meter->window(t0, t1, m.flop);
    r.session->add(m);
  };
  measurement(EnergyMeter::now_ns());
  r.supply->poll_now();
  std::ofstream(root / "sys/class/power_supply/AC/online") << "1\n";
  std::ofstream(root / "sys/class/power_supply/BAT0/status") << "Charging\n";
  r.supply->poll_now();
  measurement(EnergyMeter::now_ns());
  close_run(r, true);
  const auto j = read_json(dir_ / "run" / "run.json");
  const auto& before = j["measurements"][0]["energy"]["battery:BAT0"];
  const auto& after = j["measurements"][1]["energy"]["battery:BAT0"];
  EXPECT_TRUE(before["flop_per_j"].is_number()) << before.dump();
  EXPECT_EQ(j["measurements"][1]["supply_changed"], false) << "the change was before this window";
  EXPECT_TRUE(after["flop_per_j"].is_null()) << after.dump();
  EXPECT_EQ(after["confidence"], "low");
  EXPECT_NE(after["why_low"].get<std::string>().find("charging, so it measures the power going into the battery"),
            std::string::npos)
      << after.dump();
  // Nothing changed inside this window: the reason does not say it did.
  EXPECT_EQ(after["why_low"].get<std::string>().find("supply changed"), std::string::npos) << after.dump();
  EXPECT_EQ(j["measurements"][1]["headline_source"], nullptr) << "a charging battery is never the headline";
}

TEST_F(RunSetupTest, AMachineWithoutASupplyClassIsNotWatched) {
  fs::create_directories(dir_ / "desktop");
  o_.power.sysfs_root = (dir_ / "desktop").string();
  OpenRun r = open_run(o_, {}, {});
  EXPECT_FALSE(r.supply);
  close_run(r, true);
  const auto j = read_json(dir_ / "run" / "run.json");
  EXPECT_TRUE(j["context"]["ac_online"].is_null());
  EXPECT_FALSE(j["context"].contains("supply_changes"));
}

}  // namespace
}  // namespace flopwatt
