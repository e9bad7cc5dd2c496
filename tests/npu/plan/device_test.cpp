#include "npu/plan/device.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/npu/npu_test_support.h"
#include "workloads/error.h"

namespace flopwatt::npu {
namespace {

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(DeviceFile, ShippedDevicesLoadWithSources) {
  for (const char* name : {"phoenix", "strix"}) {
    const DeviceDesc d = load_device_file(test::devices_dir() + "/" + name + ".json");
    EXPECT_EQ(d.name, name);
    EXPECT_GT(d.clock_hz, 1e8);
    EXPECT_EQ(d.mmul_r * d.mmul_s * d.mmul_t, d.bf16_macs_per_cycle);
    EXPECT_EQ(d.l1_bytes, 65536);
    // Every parameter names a source.
    EXPECT_GE(d.sources.size(), 30u);
    for (const auto& [k, s] : d.sources) EXPECT_FALSE(s.source.empty()) << k;
  }
}

TEST(DeviceFile, PeakMatchesArrayFigures) {
  // Phoenix: 4x4 cores x 128 bf16 MAC/cycle x 2 FLOP x 1.6 GHz; Strix: 8x4 x 256 x 2 x 1.8 GHz.
  EXPECT_NEAR(test::phoenix().peak_bf16_flop_per_s(), 16 * 128 * 2 * 1.6e9, 1e6);
  EXPECT_NEAR(test::strix().peak_bf16_flop_per_s(), 32 * 256 * 2 * 1.8e9, 1e6);
}

class CorruptDevice : public ::testing::Test {
 protected:
  nlohmann::json good = nlohmann::json::parse(slurp(test::devices_dir() + "/phoenix.json"));
  test::TempDir dir;
  void expect_rejected(const nlohmann::json& j, const std::string& needle) {
    const std::string p = dir.write("dev.json", j.dump());
    try {
      load_device_file(p);
      FAIL() << "accepted a device file without " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "error must name the file: " << e.what();
    }
  }
};

TEST_F(CorruptDevice, MissingParameter) {
  auto j = good;
  j["params"].erase("clock_mhz");
  expect_rejected(j, "clock_mhz");
}

TEST_F(CorruptDevice, ParameterWithoutSource) {
  auto j = good;
  j["params"]["ddr_gbs"].erase("source");
  expect_rejected(j, "ddr_gbs");
}

TEST_F(CorruptDevice, WrongTypeAndRange) {
  auto j = good;
  j["params"]["core_rows"]["value"] = "four";
  expect_rejected(j, "core_rows");
  j = good;
  j["params"]["kernel_efficiency_64"]["value"] = 1.5;
  expect_rejected(j, "kernel_efficiency_64");
  j = good;
  j["params"]["bf16_mmul_shape"]["value"] = nlohmann::json::array({4, 8, 8});  // 256 != 128 MAC/cycle
  expect_rejected(j, "bf16_mmul_shape");
  j = good;
  // 4294967297 * 128 * 1 wrapped to 128 in int arithmetic and passed as [1, 128, 1].
  j["params"]["bf16_mmul_shape"]["value"] = nlohmann::json::array({4294967297LL, 128, 1});
  expect_rejected(j, "bf16_mmul_shape");
  j = good;
  j["params"]["usable_columns"]["value"] = 5;  // first column 1 + 5 > 5 columns
  expect_rejected(j, "usable_columns");
}

// The published figures a file holds its model to: each bad entry is refused
// with the entry's field named.
TEST_F(CorruptDevice, PublishedFigures) {
  auto j = good;
  j["published"][0]["metric"] = "tops";
  expect_rejected(j, "published[0].metric");
  j = good;
  j["published"][1]["value"] = -3;
  expect_rejected(j, "published[1].value");
  j = good;
  j["published"][0].erase("source");
  expect_rejected(j, "published[0].source");
  j = good;
  j["published"][0]["variant"] = "7850u";
  expect_rejected(j, "published[0].variant");
  j = good;
  j["published"][0]["deviation"] = {{"percent", 20}};
  expect_rejected(j, "published[0].deviation.why");
  j = good;
  j["params"].erase("int8_ops_per_cycle_per_column");
  expect_rejected(j, "int8_ops_per_cycle_per_column");
  j = good;
  j["published"] = "3.14";
  expect_rejected(j, "published");
}

TEST(DeviceFile, PublishedFiguresFollowTheVariant) {
  const DeviceDesc base = test::phoenix();
  const DeviceDesc v = load_device_file(test::devices_dir() + "/phoenix.json", "7840u");
  ASSERT_EQ(base.published.size(), 2u);
  ASSERT_EQ(v.published.size(), 2u);
  EXPECT_EQ(base.published[0].value, 16);
  EXPECT_EQ(v.published[0].value, 10);
  EXPECT_FALSE(base.published[1].deviation_stated);
  EXPECT_TRUE(v.published[1].deviation_stated);
  EXPECT_EQ(v.variant, "7840u");
}

TEST_F(CorruptDevice, WrongSchemaAndSyntax) {
  auto j = good;
  j["schema"] = "something-else/9";
  expect_rejected(j, "schema");
  j["schema"] = nlohmann::json::object();  // found by tests/fuzz/fuzz_device_file: escaped as a JSON type_error
  expect_rejected(j, "schema");
  const std::string p = dir.write("bad.json", "{\"schema\": ");
  EXPECT_THROW(load_device_file(p), InputError);
  EXPECT_THROW(load_device_file(dir.path() + "/absent.json"), InputError);
}

TEST(DeviceSearch, EnvironmentOverrideComesFirst) {
  test::TempDir dir;
  auto j = nlohmann::json::parse(slurp(test::devices_dir() + "/phoenix.json"));
  j["name"] = "testdev";
  dir.write("testdev.json", j.dump());
  ::setenv("FLOPWATT_NPU_DEVICES", dir.path().c_str(), 1);
  EXPECT_EQ(device_search_dirs().front(), dir.path());
  EXPECT_EQ(load_device("testdev").name, "testdev");
  const auto names = available_device_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "testdev"), names.end());
  ::unsetenv("FLOPWATT_NPU_DEVICES");
  EXPECT_THROW(load_device("testdev"), InputError);
  // The compiled-in source path finds the shipped files.
  EXPECT_EQ(load_device("strix").name, "strix");
}

}  // namespace
}  // namespace flopwatt::npu
