// Two laptops that once got a headline FLOP/J no measurement supports, run end
// to end: `run gemm` writes the run, the console prints its rows, `report`
// reads it back; all three must tell the same story (tests/fixtures/power/
// weak-charger.md and milliwatt-power-now.md say what each tree follows).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/harness/cli_support.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

flopwatt::testing::CommandResult run_gemm(const fs::path& root, const fs::path& out) {
  return flopwatt::testing::run_command_line(std::string(FLOPWATT_BINARY) +
                                             " run gemm --backend cpu:reference --shapes 48,48,48 --idle 0 --no-peak"
                                             " --min-reps 3 --min-time 0.3 --sample-period 0.01 --sysfs-root " +
                                             root.string() + " --out " + out.string() + " --no-store");
}

json read_json(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
}

// `run gemm` on root: its run.json, null when the run failed.
json gemm_run_json(const fs::path& root, const fs::path& out) {
  const auto r = run_gemm(root, out);
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? read_json(out / "run.json") : json();
}

// `report --format json` on one run: the run's entry in the first row.
json report_first_run(const fs::path& run_dir) {
  const auto rep = flopwatt::testing::run_command_line(std::string(FLOPWATT_BINARY) + " report " + run_dir.string() +
                                                       " --format json");
  EXPECT_EQ(rep.code, 0) << rep.err;
  const json j = rep.code == 0 ? json::parse(rep.out) : json();
  EXPECT_FALSE(j["rows"].empty()) << rep.out;
  return j["rows"].empty() ? json() : j["rows"][0]["runs"].begin().value();
}

fs::path fixture(const std::string& name, const std::string& tag) {
  const fs::path base = flopwatt::testing::temp_dir("headline-defects", tag);
  fs::copy(fs::path(FLOPWATT_TEST_FIXTURES) / "power" / name, base / "root", fs::copy_options::recursive);
  return base;
}

}  // namespace

// The adapter is online and the battery discharges: a partial draw. It used to
// become the headline (27.9 GFLOP/J on one such run) while `report` said "-".
TEST(HeadlineDefects, ABatteryDischargingOnMainsIsRecordedButNeverFlopPerJoule) {
  const fs::path base = fixture("weak-charger", "weak");
  const auto r = run_gemm(base / "root", base / "run");
  ASSERT_EQ(r.code, 0) << r.err;
  const json run = read_json(base / "run" / "run.json");
  const json& m = run["measurements"][0];
  const json& bat = m["energy"]["battery:BAT0"];
  EXPECT_NEAR(bat["avg_power_w"].get<double>(), 6.0, 0.01) << bat.dump();  // recorded
  EXPECT_TRUE(bat["flop_per_j"].is_null()) << bat.dump();                 // never FLOP/J
  EXPECT_NE(bat["why_low"].get<std::string>().find("adapter is online"), std::string::npos) << bat.dump();
  EXPECT_TRUE(m["headline_source"].is_null()) << m.dump();
  // The console row shows no FLOP/J: the last column is "-".
  std::istringstream lines(r.out);
  std::string line, row;
  while (std::getline(lines, line))
    if (line.rfind("cpu:reference", 0) == 0) row = line;
  ASSERT_FALSE(row.empty()) << r.out;
  EXPECT_EQ(row.substr(row.find_last_not_of(' ')), "-") << row;
  // report: the same, from the run's record.
  const json rr = report_first_run(base / "run");
  EXPECT_TRUE(rr["energy_source"].is_null()) << rr.dump();
  EXPECT_TRUE(rr["flop_per_j"].is_null()) << rr.dump();
  fs::remove_all(base);
}

// power_now in mW (12.5 W read as 12.5 mW) gave a 0.0125 W battery and 9.7
// TFLOP/J. The cross-check reads current_now x voltage_now instead.
TEST(HeadlineDefects, PowerNowInTheWrongUnitIsReadThroughCurrentTimesVoltage) {
  const fs::path base = fixture("milliwatt-power-now", "mw");
  const json run = gemm_run_json(base / "root", base / "run");
  ASSERT_FALSE(run.is_null());
  const json& m = run["measurements"][0];
  EXPECT_EQ(m["headline_source"], "battery:BAT0") << m.dump();
  const json& bat = m["energy"]["battery:BAT0"];
  EXPECT_NEAR(bat["avg_power_w"].get<double>(), 12.5, 0.05) << bat.dump();
  ASSERT_TRUE(bat["flop_per_j"].is_number()) << bat.dump();
  EXPECT_LT(bat["flop_per_j"].get<double>(), 1e12);
  std::string note;
  for (const auto& s : run["power_sources"])
    if (s["id"] == "battery:BAT0") note = s.value("note", "");
  EXPECT_NE(note.find("disagrees with current_now x voltage_now"), std::string::npos) << note;
  fs::remove_all(base);
}

// A RAPL package counter that never moves and a battery discharging with the
// adapter offline (a capture, replayed: tests/fixtures/power/
// dead-rapl-on-battery.md). The dead counter used to count as available, so
// `run` showed no FLOP/J while `report` took the battery.
TEST(HeadlineDefects, ADeadRaplCounterLeavesTheHeadlineToTheBatteryInRunAndReport) {
  const fs::path capture = fs::path(FLOPWATT_TEST_FIXTURES) / "power" / "dead-rapl-on-battery";
  const fs::path base = flopwatt::testing::temp_dir("headline-defects", "dead-rapl");
  const json run = gemm_run_json(capture, base / "run");
  ASSERT_FALSE(run.is_null());
  const json& pkg = run["measurements"][0]["energy"]["rapl-powercap:package-0"];
  EXPECT_TRUE(pkg["flop_per_j"].is_null()) << pkg.dump();
  EXPECT_NE(pkg["why_low"].get<std::string>().find("does not advance"), std::string::npos) << pkg.dump();
  const json& bat = run["measurements"][0]["energy"]["battery:BAT0"];
  EXPECT_EQ(run["measurements"][0]["headline_source"], "battery:BAT0") << run["measurements"][0].dump();
  EXPECT_NEAR(bat["avg_power_w"].get<double>(), 9.0, 0.25) << bat.dump();
  ASSERT_TRUE(bat["flop_per_j"].is_number()) << bat.dump();
  const json rr = report_first_run(base / "run");
  EXPECT_EQ(rr["energy_source"], "battery:BAT0") << rr.dump();
  EXPECT_NEAR(rr["flop_per_j"].get<double>(), bat["flop_per_j"].get<double>(),
              1e-6 * bat["flop_per_j"].get<double>()) << rr.dump();
  fs::remove_all(base);
}
