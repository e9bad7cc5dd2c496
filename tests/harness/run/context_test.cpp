// The run context read from a fixture root: CPU name and SIMD flags from
// /proc/cpuinfo, cpufreq and platform-profile settings from /sys, null where a
// file is missing, and the backends' notes.
#include "harness/run/context.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace flopwatt {
namespace {

namespace fs = std::filesystem;

class NotingBackend final : public Backend {
 public:
  std::string name() const override { return "cpu:noting"; }
  Availability availability() const override { return {true, ""}; }
  bool supports(const GemmDesc&) const override { return true; }
  void gemm(const GemmDesc&, const void*, const void*, void*) override {}
  std::vector<std::pair<std::string, std::string>> notes() const override { return {{"packing", "B once per shape"}}; }
};

class ContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("flopwatt_context_" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& rel, const std::string& text) {
    const fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  fs::path root_;
};

TEST_F(ContextTest, ReadsCpuAndSettingsFromTheRoot) {
  // Lines as /proc/cpuinfo prints them (key, tabs, colon, value), flags space-separated.
  write("proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD Ryzen 7 7840U w/ Radeon  780M Graphics\n"
        "flags\t\t: fpu sse2 avx2 fma avx512f avx512_bf16 amx_tilex\n\nprocessor\t: 1\n");
  write("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave\n");
  write("sys/devices/system/cpu/cpu0/cpufreq/energy_performance_preference", "balance_performance\n");
  write("sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", "amd-pstate-epp\n");
  write("sys/firmware/acpi/platform_profile", "balanced\n");
  NotingBackend b;
  const auto c = collect_context(root_.string(), {&b});
  EXPECT_EQ(c["cpu"], "AMD Ryzen 7 7840U w/ Radeon  780M Graphics");
  // Whole words only: "amx_tilex" is not amx_tile.
  EXPECT_EQ(c["cpu_flags_simd"], nlohmann::json({"avx2", "fma", "avx512f", "avx512_bf16"}));
  EXPECT_EQ(c["governor"], "powersave");
  EXPECT_EQ(c["energy_performance_preference"], "balance_performance");
  EXPECT_EQ(c["scaling_driver"], "amd-pstate-epp");
  EXPECT_EQ(c["platform_profile"], "balanced");
  EXPECT_EQ(c["backends"]["cpu:noting"]["packing"], "B once per shape");
  // Filled by the run from power_supply, not here.
  EXPECT_TRUE(c["ac_online"].is_null());
  EXPECT_GE(c["threads"].get<int>(), 1);
  EXPECT_FALSE(c["started_utc"].get<std::string>().empty());
  // Measured on the cores, not read from the root: a time, or null (one
  // thread, or a round that could not finish).
  ASSERT_TRUE(c.contains("core_round_trip_ns"));
  EXPECT_TRUE(c["core_round_trip_ns"].is_null() || c["core_round_trip_ns"].get<double>() > 0);
}

TEST_F(ContextTest, MissingFilesAreNullNotEmptyStrings) {
  fs::create_directories(root_);
  const auto c = collect_context(root_.string(), {});
  for (const char* k : {"cpu", "governor", "energy_performance_preference", "scaling_driver", "platform_profile"})
    EXPECT_TRUE(c[k].is_null()) << k << " = " << c[k];
  EXPECT_EQ(c["cpu_flags_simd"], nlohmann::json::array());
  EXPECT_EQ(c["backends"], nlohmann::json::object());
}

TEST(Context, TemperaturesAreAnArrayOfIdAndCelsius) {
  EXPECT_EQ(temperatures_json({}), nlohmann::json::array());
  const auto j = temperatures_json({{"hwmon:k10temp:Tctl", 61.5}, {"thermal:x86_pkg_temp", 48}});
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["id"], "hwmon:k10temp:Tctl");
  EXPECT_EQ(j[0]["celsius"], 61.5);
  EXPECT_EQ(j[1]["id"], "thermal:x86_pkg_temp");
}

TEST(Context, ReadFirstLineIsEmptyForAMissingFile) {
  EXPECT_EQ(read_first_line("/nonexistent/flopwatt/file"), "");
}

}  // namespace
}  // namespace flopwatt
