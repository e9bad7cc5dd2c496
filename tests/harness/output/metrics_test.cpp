#include "harness/output/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "harness/output/csv_writer.h"
#include "harness/output/run_model.h"

namespace flopwatt {
namespace {

Measurement timed_row() {
  Measurement m;
  m.workload = "gemm";
  m.op = "qkv";
  m.backend = "npu:sim-test";
  m.time_s = TimeStats{1.0, 0.5, 2.0, 9.0, 1.1, 0.4, 2.5, 0.9, 1.2};
  m.breakdown_s = Breakdown{0.1, 0.2, 0.3, 0.4, 0.5};
  m.energy["pkg"] = EnergyFigures{};
  return m;
}

TEST(Metrics, SetAndGetNestAlongThePath) {
  nlohmann::json j;
  json_set(j, "time/median_s", 1.5);
  json_set(j, "time/p10_s", 1.0);
  json_set(j, "flop", 7);
  EXPECT_EQ(j.dump(), R"({"flop":7,"time":{"median_s":1.5,"p10_s":1.0}})");
  ASSERT_NE(json_get(j, "time/median_s"), nullptr);
  EXPECT_EQ(*json_get(j, "time/median_s"), 1.5);
  EXPECT_EQ(json_get(j, "time/p90_s"), nullptr);
  EXPECT_EQ(json_get(j, "flop/x"), nullptr);  // a number has no children
}

// One spelling: every time and breakdown metric is a measurements.csv column
// and, under the same name, a path in run.json.
TEST(Metrics, EveryTableMetricIsACsvColumnAndAJsonPath) {
  flopwatt::Run run;
  run.measurements.push_back(timed_row());
  const auto cols = csv_columns(run);
  const nlohmann::json j = to_json(run.measurements[0]);
  std::vector<const Metric*> all(std::begin(kTimeColumns), std::end(kTimeColumns));
  all.insert(all.end(), std::begin(kBreakdownColumns), std::end(kBreakdownColumns));
  for (const Metric* m : all) {
    EXPECT_NE(std::find(cols.begin(), cols.end(), std::string(m->name)), cols.end()) << m->name;
    EXPECT_NE(json_get(j, m->name), nullptr) << m->name << " in " << j.dump();
  }
  for (const Metric* m : kEnergyColumns) {
    const std::string col = "energy/pkg/" + std::string(m->name);
    EXPECT_NE(std::find(cols.begin(), cols.end(), col), cols.end()) << col;
    EXPECT_TRUE(j["energy"]["pkg"].contains(std::string(m->name))) << m->name;
  }
}

// The roofline metrics and the counters: a CSV column each, the same name a
// run.json key, and the values survive the round trip through run.json.
TEST(Metrics, RoofAndCounterMetricsAreColumnsAndRoundTrip) {
  flopwatt::Run run;
  Measurement m = timed_row();
  m.intensity = 2.5;
  m.roof_flop_per_s = 4e10;
  m.fraction_of_roof = 0.25;
  m.roof_bound = "memory";
  m.counters["perf::CYCLES"] = 12345.0;
  m.counters["UNC_M_CAS_COUNT:RD"] = std::nullopt;
  run.measurements.push_back(m);
  const auto cols = csv_columns(run);
  const nlohmann::json j = to_json(run.measurements[0]);
  for (const Metric* x : kRoofColumns) {
    EXPECT_NE(std::find(cols.begin(), cols.end(), std::string(x->name)), cols.end()) << x->name;
    ASSERT_NE(json_get(j, x->name), nullptr) << x->name;
  }
  EXPECT_NE(std::find(cols.begin(), cols.end(), "counters/perf::CYCLES"), cols.end());
  EXPECT_EQ(j["counters"]["perf::CYCLES"], 12345.0);
  EXPECT_TRUE(j["counters"]["UNC_M_CAS_COUNT:RD"].is_null());
  const Measurement back = measurement_from_json(j);
  EXPECT_EQ(back.intensity, 2.5);
  EXPECT_EQ(back.roof_flop_per_s, 4e10);
  EXPECT_EQ(back.fraction_of_roof, 0.25);
  EXPECT_EQ(back.roof_bound, "memory");
  EXPECT_EQ(back.counters.at("perf::CYCLES"), 12345.0);
  EXPECT_FALSE(back.counters.at("UNC_M_CAS_COUNT:RD"));
  // A row without them writes nulls and no counters object.
  const nlohmann::json plain = to_json(timed_row());
  EXPECT_TRUE(plain["fraction_of_roof"].is_null());
  EXPECT_FALSE(plain.contains("counters"));
}

TEST(Metrics, VersionTwoRoundTripsAndVersionOneStillReads) {
  const Measurement m = timed_row();
  const Measurement back = measurement_from_json(to_json(m));
  EXPECT_EQ(back.time_s.median, 1.0);
  EXPECT_EQ(back.time_s.ci95_lo, 0.9);
  EXPECT_EQ(back.time_s.ci95_hi, 1.2);
  EXPECT_EQ(back.time_s.max, 2.5);
  ASSERT_TRUE(back.breakdown_s);
  EXPECT_EQ(back.breakdown_s->reconfigure, 0.5);
  const nlohmann::json v1 = {{"workload", "gemm"}, {"op", "qkv"}, {"backend", "b"}, {"dtype", "fp32"},
                             {"time_s", {{"median", 3.0}, {"p10", 2.0}, {"p90", 4.0}, {"total", 30.0},
                                         {"ci95", {2.5, 3.5}}}},
                             {"breakdown_s", {{"copy_in", 1.0}, {"compute", 2.0}, {"copy_out", 0.0},
                                              {"submit", 0.0}, {"reconfigure", 0.25}}}};
  const Measurement old = measurement_from_json(v1);
  EXPECT_EQ(old.time_s.median, 3.0);
  EXPECT_EQ(old.time_s.ci95_hi, 3.5);
  ASSERT_TRUE(old.breakdown_s);
  EXPECT_EQ(old.breakdown_s->reconfigure, 0.25);
}

}  // namespace
}  // namespace flopwatt
