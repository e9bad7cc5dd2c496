// `flopwatt sources` (harness/cli/cmd_sources.cpp) end to end, when the binary is built.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/power/fixture_tree.h"
#include "tests/power/process_util.h"

using namespace flopwatt::power::testing;

namespace {

const std::string kLaptop = std::string(FLOPWATT_TEST_FIXTURES) + "/power/laptop";

void require_binary() {
  if (!std::ifstream(FLOPWATT_BINARY).good()) GTEST_SKIP() << FLOPWATT_BINARY << " not built";
}

}  // namespace

TEST(SourcesCommand, JsonListsFoundAndMissingWithMeasuredFields) {
  require_binary();
  const CommandResult r =
      run_command("'" FLOPWATT_BINARY "' sources --json --measure 0.3 --sysfs-root '" + kLaptop + "' 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& s : j["sources"]) by_id[s["id"]] = s;
  ASSERT_TRUE(by_id.count("battery:BAT0"));
  EXPECT_TRUE(by_id["battery:BAT0"]["available"].get<bool>());
  EXPECT_NEAR(by_id["battery:BAT0"]["avg_power_w"].get<double>(), 9.5, 1e-9);
  EXPECT_NEAR(by_id["hwmon:amdgpu:PPT"]["avg_power_w"].get<double>(), 14.0, 1e-9);
  // Static fixture counters never move: reported as not updating, not as 0 W of real power.
  EXPECT_FALSE(by_id["rapl-powercap:package-0"]["updating"].get<bool>());
  EXPECT_FALSE(by_id["rapl-msr:*"]["available"].get<bool>());
  EXPECT_FALSE(by_id["rapl-msr:*"]["fix"].is_null());
  EXPECT_FALSE(j["power_state"]["ac_online"].get<bool>());
  EXPECT_EQ(j["temperatures"].size(), 3u);
}

TEST(SourcesCommand, NothingAvailableStillExitsZeroAndExplains) {
  require_binary();
  FixtureTree t;
  const CommandResult r = run_command("FLOPWATT_SYSFS_ROOT='" + t.root() + "' '" FLOPWATT_BINARY "' sources 2>&1");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("No power source is available"), std::string::npos) << r.out;
  for (const char* id : {"rapl-powercap:*", "rapl-perf:*", "rapl-msr:*", "battery:*", "hwmon:*"})
    EXPECT_NE(r.out.find(id), std::string::npos) << id;
}

TEST(SourcesCommand, BadInputIsExitTwoWithOneLine) {
  require_binary();
  CommandResult r = run_command("'" FLOPWATT_BINARY "' sources --sysfs-root /nonexistent-root 2>&1");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--sysfs-root"), std::string::npos) << r.out;
  FixtureTree t;
  t.write("log.csv", "# clock: relative\n0,abc\n");
  r = run_command("'" FLOPWATT_BINARY "' sources --measure 0 --power-log '" + t.path("log.csv") + "' 2>&1");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("log.csv:2"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}
