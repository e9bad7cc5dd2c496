#include "harness/analysis/bench_compare.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "workloads/error.h"

namespace flopwatt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A repetition as Google Benchmark's JSON reporter writes it
// (src/json_reporter.cc: name, run_name, run_type, repetitions,
// repetition_index, iterations, real_time, cpu_time, time_unit, counters as
// top-level keys, label when set).
json rep(const std::string& name, int i, double real, double cpu, const char* unit, json counters,
         const std::string& label = "") {
  json b = {{"name", name},         {"run_name", name}, {"run_type", "iteration"}, {"repetitions", 5},
            {"repetition_index", i}, {"threads", 1},    {"iterations", 100},       {"real_time", real},
            {"cpu_time", cpu},       {"time_unit", unit}};
  for (auto& [k, v] : counters.items()) b[k] = v;
  if (!label.empty()) b["label"] = label;
  return b;
}

json aggregate(const std::string& name, const char* agg, double real) {
  return {{"name", name + "_" + agg}, {"run_name", name},   {"run_type", "aggregate"}, {"aggregate_name", agg},
          {"repetitions", 5},         {"threads", 1},       {"iterations", 5},         {"real_time", real},
          {"cpu_time", real},         {"time_unit", "ns"}};
}

fs::path write(const fs::path& p, const json& j) {
  std::ofstream(p) << j.dump(2);
  return p;
}

class BenchCompare : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("flopwatt_bench_compare_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(BenchCompare, TimeAndEnergyCountersPerBenchmarkWithUTest) {
  json a = {{"context", {{"flopwatt_power_headline", "rapl-powercap:package-0"}}}, {"benchmarks", json::array()}};
  json b = a;
  // gemm: the same times on both sides, B draws more power (every B above every A).
  for (int i = 0; i < 5; ++i) {
    a["benchmarks"].push_back(rep("gemm/cpu:x/m", i, 1000 + i, 990 + i, "ns",
                                  {{"FLOP/s", 1e9 + i}, {"W", 10.0 + 0.1 * i}, {"J/iter", 1e-5}, {"FLOP/J", 1e8 - i}}));
    b["benchmarks"].push_back(rep("gemm/cpu:x/m", i, 1000 + i, 990 + i, "ns",
                                  {{"FLOP/s", 1e9 + i}, {"W", 12.0 + 0.1 * i}, {"J/iter", 1.2e-5}, {"FLOP/J", 8e7 - i}}));
  }
  a["benchmarks"].push_back(aggregate("gemm/cpu:x/m", "mean", 1002));
  b["benchmarks"].push_back(aggregate("gemm/cpu:x/m", "mean", 1002));
  // One repetition each (and in ms): compared, no U test.
  a["benchmarks"].push_back(rep("gpt2/d2/cpu:x/step", 0, 2.0, 2.0, "ms", {{"FLOP/s", 5e9}}));
  b["benchmarks"].push_back(rep("gpt2/d2/cpu:x/step", 0, 3.0, 3.0, "ms", {{"FLOP/s", 4e9}}));
  a["benchmarks"].push_back(rep("only/a", 0, 1, 1, "ns", json::object()));
  b["benchmarks"].push_back(rep("only/b", 0, 1, 1, "ns", json::object()));

  const BenchComparison c = compare_bench(load_bench_json(write(dir_ / "a.json", a)),
                                          load_bench_json(write(dir_ / "b.json", b)));
  ASSERT_EQ(c.rows.size(), 2u);  // the aggregate is not a benchmark of its own
  EXPECT_EQ(c.only_a, std::vector<std::string>{"only/a"});
  EXPECT_EQ(c.only_b, std::vector<std::string>{"only/b"});
  EXPECT_TRUE(c.notes.empty());

  const BenchRow& g = c.rows[0];
  EXPECT_EQ(g.name, "gemm/cpu:x/m");
  EXPECT_EQ(g.reps_a, 5u);
  EXPECT_NE(g.warning.find("unreliable below 9"), std::string::npos) << g.warning;
  std::map<std::string, const MetricComparison*> by;
  for (const auto& m : g.metrics) by[m.metric] = &m;
  ASSERT_TRUE(by.count("real_time") && by.count("cpu_time") && by.count("W") && by.count("FLOP/J") &&
              by.count("J/iter") && by.count("FLOP/s"));
  // Identical samples: U = 12.5 of 25, nothing to see (ties: normal approximation).
  ASSERT_TRUE(by["real_time"]->utest);
  EXPECT_NEAR(by["real_time"]->median_a, 1002e-9, 1e-18);
  EXPECT_DOUBLE_EQ(by["real_time"]->utest->p, 1.0);
  EXPECT_FALSE(by["real_time"]->significant);
  // Separated 5 vs 5, no ties: exact p = 2 / C(10, 5) = 2/252.
  ASSERT_TRUE(by["W"]->utest);
  EXPECT_EQ(by["W"]->utest->method, "exact");
  EXPECT_NEAR(by["W"]->utest->p, 2.0 / 252, 1e-15);
  EXPECT_TRUE(by["W"]->significant);
  EXPECT_TRUE(by["W"]->energy);
  EXPECT_NEAR(by["W"]->change, 2.0 / 10.2, 1e-12);  // medians 10.2 and 12.2
  EXPECT_TRUE(by["FLOP/J"]->significant);
  EXPECT_LT(by["FLOP/J"]->change, 0);

  const BenchRow& s = c.rows[1];
  EXPECT_EQ(s.reps_a, 1u);
  EXPECT_NE(s.warning.find("no U test"), std::string::npos);
  for (const auto& m : s.metrics) EXPECT_FALSE(m.utest.has_value()) << m.metric;
  ASSERT_FALSE(s.metrics.empty());
  EXPECT_NEAR(s.metrics[0].median_a, 2e-3, 1e-15);  // ms converted
  EXPECT_NEAR(s.metrics[0].change, 0.5, 1e-12);

  const std::string md = bench_comparison_markdown(c);
  EXPECT_NE(md.find("| gemm/cpu:x/m | W | 10.2 | 12.2 | +19.6% | 0.0079 | 5 vs 5, exact | B worse |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| gemm/cpu:x/m | FLOP/J |"), std::string::npos);
  const json j = bench_comparison_json(c);
  EXPECT_EQ(j["rows"][0]["metrics"].size(), g.metrics.size());
  EXPECT_EQ(bench_comparison_csv(c).substr(0, 12), "name,metric,");
}

// Each loop's label names its own energy source (flopwatt/meter.h's label format): a row whose
// loops name the same source on both sides compares its energy, marked where a loop was low
// confidence; a row whose sides name different sources compares time only and says why.
TEST_F(BenchCompare, DifferentEnergySourcesAndLowConfidenceAreSaid) {
  const std::string per_loop = "per loop: each row's label names its own judged source";
  json a = {{"context", {{"flopwatt_power_headline", per_loop}}}, {"benchmarks", json::array()}};
  json b = a;
  for (int i = 0; i < 3; ++i) {
    a["benchmarks"].push_back(rep("x", i, 1, 1, "ns", {{"W", 5.0 + i}}, "energy from battery:BAT0; low confidence: window 0.5 s"));
    b["benchmarks"].push_back(rep("x", i, 1, 1, "ns", {{"W", 6.0 + i}}, "energy from battery:BAT0"));
    a["benchmarks"].push_back(rep("y", i, 1, 1, "ns", {{"W", 5.0 + i}}, "energy from battery:BAT0"));
    b["benchmarks"].push_back(rep("y", i, 1, 1, "ns", {{"W", 6.0 + i}}, "energy from rapl-powercap:package-0"));
  }
  const BenchComparison c = compare_bench(load_bench_json(write(dir_ / "a.json", a)),
                                          load_bench_json(write(dir_ / "b.json", b)));
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_TRUE(c.rows[0].low_confidence_energy);
  EXPECT_TRUE(c.rows[0].energy_note.empty()) << c.rows[0].energy_note;
  EXPECT_NE(bench_comparison_markdown(c).find("W (low confidence)"), std::string::npos);
  // y: battery against package, no W compared.
  EXPECT_NE(c.rows[1].energy_note.find("A: battery:BAT0, B: rapl-powercap:package-0"), std::string::npos)
      << c.rows[1].energy_note;
  for (const auto& m : c.rows[1].metrics) EXPECT_NE(m.metric, "W");
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_EQ(c.notes[0].rfind("y: energy from different sources", 0), 0u) << c.notes[0];
}

TEST_F(BenchCompare, NotBenchJsonIsAnInputErrorNamingTheFile) {
  const fs::path run = write(dir_ / "run.json", json{{"schema_version", 2}, {"measurements", json::array()}});
  EXPECT_FALSE(is_bench_json(run.string()));
  EXPECT_FALSE(is_bench_json(dir_.string()));
  try {
    load_bench_json(run.string());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), run.string());
    EXPECT_NE(e.problem().find("no benchmarks array"), std::string::npos);
  }
  std::ofstream(dir_ / "cut.json") << "{\"benchmarks\": [";
  EXPECT_THROW(load_bench_json((dir_ / "cut.json").string()), InputError);
}

// A counter compares only where every repetition of both sides has it: a
// repetition without it (a loop whose counters were taken off) drops the
// counter from the row, not the row; nine or more repetitions need no warning.
TEST_F(BenchCompare, ACounterMissingFromOneRepetitionIsNotCompared) {
  json a = {{"benchmarks", json::array()}};
  json b = a;
  for (int i = 0; i < 9; ++i) {
    a["benchmarks"].push_back(rep("gemm/cpu:x/m", i, 1000 + i, 1000 + i, "ns", {{"FLOP/s", 1e9 + i}}));
    b["benchmarks"].push_back(
        rep("gemm/cpu:x/m", i, 1100 + i, 1100 + i, "ns", i == 4 ? json::object() : json{{"FLOP/s", 9e8 + i}}));
  }
  const BenchComparison c = compare_bench(load_bench_json(write(dir_ / "a.json", a)),
                                          load_bench_json(write(dir_ / "b.json", b)));
  ASSERT_EQ(c.rows.size(), 1u);
  std::vector<std::string> metrics;
  for (const auto& m : c.rows[0].metrics) metrics.push_back(m.metric);
  EXPECT_EQ(metrics, (std::vector<std::string>{"real_time", "cpu_time"}));
  EXPECT_EQ(c.rows[0].warning, "");
  EXPECT_TRUE(c.rows[0].metrics[0].significant);
}

}  // namespace
}  // namespace flopwatt
