#include "harness/output/run_model.h"

#include <gtest/gtest.h>

#include <sstream>

#include "harness/output/csv_writer.h"

namespace flopwatt {
namespace {

Measurement sample_measurement() {
  Measurement m;
  m.workload = "gemm";
  m.op = "qkv";
  m.pass = "fwd";
  m.backend = "cpu:test";
  m.shape = Shape{256, 2304, 768};
  m.layout = "NT";
  m.count_per_step = 12;
  m.reps = 3;
  m.rep_times_s = {0.1, 0.2, 0.3};
  m.time_s.median = 0.2;
  m.time_s.total = 0.6;
  m.flop = 1e9;
  m.flop_per_s = 5e9;
  m.flop_per_s_window = 5e9;
  m.rep_max_over_median = 1.5;
  m.stalled = false;
  m.verified = true;
  m.breakdown_s = Breakdown{1, 2, 3, 4, 5};
  EnergyFigures e;
  e.j = 12;
  e.avg_power_w = 20;
  e.net_j = 8;
  e.flop_per_j = 2.5e8;
  e.confidence = "low";
  e.why_low = "window 0.6 s < 3 x 1 s";
  m.energy["battery:BAT0"] = e;
  return m;
}

TEST(RunModel, JsonRoundTripKeepsEveryField) {
  flopwatt::Run r;
  r.run_id = "x";
  r.context = {{"cpu", "test"}};
  r.power_sources.push_back(
      {"battery:BAT0", "battery", "gauge", true, std::nullopt, std::nullopt, 1.0, false, {}, "power_now, uW"});
  r.idle["battery:BAT0"] = {3.5, 3.0, 0.25, 6};
  r.measurements.push_back(sample_measurement());
  r.measurements.back().supply_changed = true;
  r.measurements.back().core_round_trip_ns = 81.5;
  const nlohmann::json j = to_json(r);
  const flopwatt::Run back = run_from_json(j);
  EXPECT_EQ(to_json(back), j);
  EXPECT_TRUE(j["measurements"][0]["loss"].is_null());
  EXPECT_TRUE(j["measurements"][0]["layer"].is_null());
  EXPECT_EQ(j["measurements"][0]["energy"]["battery:BAT0"]["confidence"], "low");
  EXPECT_EQ(j["measurements"][0]["supply_changed"], true);
  EXPECT_EQ(j["measurements"][0]["core_round_trip_ns"], 81.5);
  EXPECT_EQ(j["power_sources"][0]["note"], "power_now, uW");
  EXPECT_EQ(j["idle"]["battery:BAT0"]["sd_w"], 0.25);
  EXPECT_EQ(j["idle"]["battery:BAT0"]["windows"], 6);
  EXPECT_EQ(j["measurements"][0]["stalled"], false);
  EXPECT_EQ(back.measurements[0].flop_per_s_window, 5e9);
  EXPECT_TRUE(j["figures_basis"]["flop_per_j"].get<std::string>().starts_with("window"));
}

TEST(CsvReporter, ColumnsAreTheUnionOfEnergySources) {
  flopwatt::Run r;
  Measurement a = sample_measurement();
  Measurement b = sample_measurement();
  b.energy.clear();
  b.energy["npu-model:phoenix"] = EnergyFigures{1, 2, std::nullopt, std::nullopt, std::nullopt, "ok", ""};
  b.op = "needs,\"quoting\"";
  r.measurements = {b, a};
  std::ostringstream os;
  write_measurements_csv(r, os);
  const std::string s = os.str();
  EXPECT_NE(s.find("energy/battery:BAT0/j"), std::string::npos);
  EXPECT_NE(s.find("energy/npu-model:phoenix/flop_per_j"), std::string::npos);
  EXPECT_NE(s.find("\"needs,\"\"quoting\"\"\""), std::string::npos);
  // every row has as many fields as the header (no embedded newlines here)
  std::istringstream is(s);
  std::string line;
  std::getline(is, line);
  const auto header_fields = csv_columns(r).size();
  while (std::getline(is, line)) {
    std::size_t fields = 1;
    bool q = false;
    for (char c : line) {
      if (c == '"') q = !q;
      fields += (!q && c == ',');
    }
    EXPECT_EQ(fields, header_fields) << line;
  }
}

}  // namespace
}  // namespace flopwatt
