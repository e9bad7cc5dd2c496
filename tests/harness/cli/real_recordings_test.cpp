// Recordings of real machines (tests/fixtures/real/<name>.md: the public
// source and the ground truth of each) end to end: `flopwatt sources --json`
// lists what each machine has with the right domain and supply state, and
// `run gemm` on it takes the headline the ground truth names, or none.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/harness/cli_support.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A copy of the recording: a run must never write into the source tree.
fs::path recording(const std::string& name) {
  const fs::path base = flopwatt::testing::temp_dir("real-recordings", name);
  fs::copy(fs::path(FLOPWATT_TEST_FIXTURES) / "real" / name, base / "root", fs::copy_options::recursive);
  return base;
}

std::map<std::string, json> sources_of(const fs::path& root, json* whole = nullptr) {
  const auto r = flopwatt::testing::run_command_line(std::string(FLOPWATT_BINARY) + " sources --json --sysfs-root " +
                                                     root.string());
  EXPECT_EQ(r.code, 0) << r.err;
  std::map<std::string, json> by_id;
  if (r.code != 0) return by_id;
  const json j = json::parse(r.out);
  for (const auto& s : j["sources"]) by_id[s["id"].get<std::string>()] = s;
  if (whole) *whole = j;
  return by_id;
}

json gemm_row(const fs::path& base) {
  const auto r = flopwatt::testing::run_command_line(
      std::string(FLOPWATT_BINARY) +
      " run gemm --backend cpu:reference --shapes 64,64,64 --idle 0 --no-peak --min-reps 3 --min-time 0.3"
      " --sample-period 0.01 --sysfs-root " + (base / "root").string() + " --out " + (base / "run").string() +
      " --no-store");
  EXPECT_EQ(r.code, 0) << r.err;
  if (r.code != 0) return json();
  std::ifstream f(base / "run" / "run.json");
  return json::parse(f)["measurements"][0];
}

}  // namespace

// Discrete Radeon boards: PPT is the board's power, domain gpu, never CPU work's headline.
TEST(RealRecordings, DiscreteRadeonBoardsAreListedAsGpusAndNeverHeadlineCpuWork) {
  for (const char* name : {"amdgpu-rx6900xt", "amdgpu-rx9070xt", "amdgpu-rx580", "amdgpu-vega56", "amdgpu-rx7600s"}) {
    const fs::path base = recording(name);
    json whole;
    auto by_id = sources_of(base / "root", &whole);
    ASSERT_TRUE(by_id.count("hwmon:amdgpu:PPT")) << name;
    const json& ppt = by_id["hwmon:amdgpu:PPT"];
    EXPECT_TRUE(ppt["available"].get<bool>()) << name << ppt.dump();
    EXPECT_EQ(ppt["domain"], "gpu") << name;
    EXPECT_NE(ppt["note"].get<std::string>().find("device class discrete GPU"), std::string::npos) << ppt.dump();
    EXPECT_TRUE(whole["power_state"].is_null()) << name << ": nothing in power_supply, never on battery";
  }
  const fs::path base = recording("amdgpu-rx6900xt");
  const json m = gemm_row(base);
  ASSERT_FALSE(m.is_null());
  EXPECT_TRUE(m["headline_source"].is_null()) << m.dump();
  const json& ppt = m["energy"]["hwmon:amdgpu:PPT"];
  EXPECT_NEAR(ppt["avg_power_w"].get<double>(), 36.0, 0.01) << ppt.dump();  // recorded as the GPU's
  EXPECT_TRUE(ppt["flop_per_j"].is_null()) << ppt.dump();
  EXPECT_NE(ppt["why_low"].get<std::string>().find("a discrete GPU's power, not the CPU's work"), std::string::npos)
      << ppt.dump();
}

// A ThinkPad on battery beside a package zone with 4090 W firmware limits.
TEST(RealRecordings, ThinkpadOnBatteryTakesTheBatteryAndBoundsThePackageByItsRealLimit) {
  const fs::path base = recording("thinkpad-45n1");
  json whole;
  auto by_id = sources_of(base / "root", &whole);
  for (const char* id : {"battery:BAT0", "battery-energy:BAT0", "rapl-powercap:package-0", "rapl-powercap:core-0"})
    EXPECT_TRUE(by_id.count(id) && by_id[id]["available"].get<bool>()) << id;
  EXPECT_FALSE(whole["power_state"]["ac_online"].get<bool>()) << whole["power_state"].dump();
  const std::string note = by_id["rapl-powercap:package-0"]["note"].get<std::string>();
  EXPECT_NE(note.find("a step above 190 W"), std::string::npos) << note;
  const json m = gemm_row(base);
  ASSERT_FALSE(m.is_null());
  ASSERT_TRUE(m["headline_source"].is_string()) << m.dump();
  EXPECT_EQ(m["headline_source"], "battery:BAT0") << m.dump();
  EXPECT_NEAR(m["energy"]["battery:BAT0"]["avg_power_w"].get<double>(), 5.002, 0.001) << m.dump();
}

// Batteries that read differently from the ThinkPad's: a Dell's charge-based
// one (charge_now x voltage_now) and an Asahi MacBook's negative current and
// power while discharging. Each is on battery and takes its own battery as
// the headline at the magnitude of its draw.
TEST(RealRecordings, ChargeBasedAndNegativeCurrentBatteriesGiveTheirDraw) {
  struct Machine {
    const char* name;
    const char* battery;
    double watts;
  };
  for (const Machine& mc : {Machine{"dell-sanyo-bat0", "BAT0", 1.109 * 7.461},
                            Machine{"macbook-air-m1", "macsmc-battery", 4.721}}) {
    const fs::path base = recording(mc.name);
    json whole;
    auto by_id = sources_of(base / "root", &whole);
    const std::string id = std::string("battery:") + mc.battery;
    ASSERT_TRUE(by_id.count(id)) << mc.name;
    EXPECT_TRUE(by_id[id]["available"].get<bool>()) << by_id[id].dump();
    EXPECT_FALSE(whole["power_state"]["ac_online"].get<bool>()) << whole["power_state"].dump();
    EXPECT_TRUE(whole["power_state"]["ac_inferred_from_battery_status"].get<bool>());
    const json m = gemm_row(base);
    ASSERT_FALSE(m.is_null()) << mc.name;
    ASSERT_TRUE(m["headline_source"].is_string()) << m.dump();
    EXPECT_EQ(m["headline_source"], id) << m.dump();
    EXPECT_NEAR(m["energy"][id]["avg_power_w"].get<double>(), mc.watts, 0.001) << m.dump();
  }
  // The Dell's charge is 2.155 of 7.328 Ah at one voltage: 29.4 %.
  json whole;
  sources_of(recording("dell-sanyo-bat0") / "root", &whole);
  EXPECT_NEAR(whole["power_state"]["battery_percent"].get<double>(), 100.0 * 2.155 / 7.328, 1e-6);
}

// Power supplies that are not the machine's battery: a mouse's (scope Device)
// is no source and no supply state; a UCSI port with a PD charger online is
// mains. Neither gives a headline.
TEST(RealRecordings, PeripheralBatteryAndPdPortAreNoSourceOfTheMachine) {
  {
    const fs::path base = recording("hidpp-mx-anywhere3");
    json whole;
    auto by_id = sources_of(base / "root", &whole);
    EXPECT_TRUE(whole["power_state"].is_null()) << whole["power_state"].dump();
    ASSERT_TRUE(by_id.count("battery:*"));
    EXPECT_FALSE(by_id["battery:*"]["available"].get<bool>());
    for (const auto& [id, s] : by_id) EXPECT_EQ(id.find("hidpp"), std::string::npos) << s.dump();
    const json m = gemm_row(base);
    ASSERT_FALSE(m.is_null());
    EXPECT_TRUE(m["headline_source"].is_null()) << m.dump();
  }
  {
    const fs::path base = recording("thinkpad-t480s-ucsi");
    json whole;
    auto by_id = sources_of(base / "root", &whole);
    EXPECT_TRUE(whole["power_state"]["ac_online"].get<bool>()) << whole["power_state"].dump();
    EXPECT_FALSE(whole["power_state"]["ac_inferred_from_battery_status"].get<bool>());
    ASSERT_TRUE(by_id.count("battery:*"));
    EXPECT_FALSE(by_id["battery:*"]["available"].get<bool>());
    for (const auto& [id, s] : by_id) EXPECT_EQ(id.find("ucsi"), std::string::npos) << s.dump();
    const json m = gemm_row(base);
    ASSERT_FALSE(m.is_null());
    EXPECT_TRUE(m["headline_source"].is_null()) << m.dump();
  }
}
