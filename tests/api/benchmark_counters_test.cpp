// flopwatt/benchmark.h's set_counters, the one function a user's Google
// Benchmark suite and flopwatt_bench set their counters through, on windows
// built by hand and run through Google Benchmark itself.
#include "flopwatt/benchmark.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>

namespace {

using flopwatt::SourceFigure;
using flopwatt::WindowResult;

struct Row {
  std::map<std::string, double> counters;
  std::string label;
};

class Capture : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      Row row;
      for (const auto& [k, c] : r.counters) row.counters[k] = c.value;
      row.label = r.report_label;
      rows.push_back(row);
    }
  }
  std::vector<Row> rows;
};

// Runs one 4-iteration loop whose counters set_counters sets from `r`.
Row run(const WindowResult& r, double flop_per_iter, std::optional<std::string> suite, bool all = false) {
  static int n = 0;
  const std::string name = "set_counters_" + std::to_string(n++);
  benchmark::ClearRegisteredBenchmarks();
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
    for (auto _ : st) benchmark::DoNotOptimize(n);
    flopwatt::gbench::set_counters(st, r, flop_per_iter, suite, all);
  })->Iterations(4);
  Capture c;
  benchmark::RunSpecifiedBenchmarks(&c);
  EXPECT_EQ(c.rows.size(), 1u);
  return c.rows.empty() ? Row{} : c.rows.front();
}

SourceFigure source(const std::string& id, const std::string& domain, double j, double w) {
  SourceFigure s;
  s.id = id;
  s.domain = domain;
  s.energy_j = j;
  s.avg_power_w = w;
  s.flop_per_j = 1e9;
  return s;
}

WindowResult two_sources(const std::optional<std::string>& headline) {
  WindowResult r;
  r.sources = {source("battery:BAT0", "battery", 8, 20), source("rapl:package-0", "package", 4, 10)};
  r.headline = headline;
  r.headline_why = headline ? "widest domain" : "battery:BAT0 refused: not discharging";
  r.supply = "battery";
  if (headline) {
    const auto& s = *headline == "battery:BAT0" ? r.sources[0] : r.sources[1];
    r.energy_j = s.energy_j;
    r.avg_power_w = s.avg_power_w;
    r.flop_per_j = s.flop_per_j;
  }
  return r;
}

TEST(SetCounters, TheSuitesHeadlineSourceGivesThePlainCounters) {
  const Row row = run(two_sources("battery:BAT0"), 1e6, "battery:BAT0");
  EXPECT_DOUBLE_EQ(row.counters.at("J/iter"), 2.0);
  EXPECT_DOUBLE_EQ(row.counters.at("W"), 20.0);
  EXPECT_DOUBLE_EQ(row.counters.at("FLOP/J"), 1e9);
  EXPECT_TRUE(row.counters.count("FLOP/s"));
  EXPECT_FALSE(row.counters.count("rapl:package-0:W")) << "other sources only with all_sources";
  EXPECT_FALSE(row.counters.count("supply_changed"));
}

// A loop whose headline fell to another source than the suite's (the battery
// stopped discharging) would put package joules in a column of battery joules.
TEST(SetCounters, ALoopOnAnotherSourceThanTheSuitesGetsNoPlainCounters) {
  WindowResult r = two_sources("rapl:package-0");
  r.sources[0].why_low = "battery:BAT0 is not discharging (Charging)";
  const Row row = run(r, 1e6, "battery:BAT0");
  EXPECT_FALSE(row.counters.count("J/iter"));
  EXPECT_FALSE(row.counters.count("W"));
  EXPECT_DOUBLE_EQ(row.counters.at("supply_changed"), 1.0) << "the suite's battery no longer discharges";
  EXPECT_NE(row.label.find("not discharging"), std::string::npos) << row.label;
}

TEST(SetCounters, ASupplyChangeTakesEveryEnergyCounterOff) {
  WindowResult r = two_sources("battery:BAT0");
  r.supply = "changed";
  const Row row = run(r, 1e6, "battery:BAT0", /*all=*/true);
  EXPECT_DOUBLE_EQ(row.counters.at("supply_changed"), 1.0);
  for (const auto& [k, v] : row.counters) EXPECT_TRUE(k == "supply_changed" || k == "FLOP/s") << k;
  EXPECT_NE(row.label.find("power supply changed"), std::string::npos) << row.label;
}

TEST(SetCounters, AllSourcesArePrefixedAndALowConfidenceHeadlineIsLabelled) {
  WindowResult r = two_sources("battery:BAT0");
  r.sources[0].low_confidence = true;
  r.sources[0].why_low = "2 samples in the window";
  const Row row = run(r, 1e6, std::nullopt, /*all=*/true);
  EXPECT_DOUBLE_EQ(row.counters.at("J/iter"), 2.0);
  EXPECT_DOUBLE_EQ(row.counters.at("rapl:package-0:J/iter"), 1.0);
  EXPECT_DOUBLE_EQ(row.counters.at("rapl:package-0:W"), 10.0);
  EXPECT_FALSE(row.counters.count("battery:BAT0:W")) << "the headline is not repeated under its id";
  EXPECT_NE(row.label.find("low-confidence: 2 samples"), std::string::npos) << row.label;
}

TEST(SetCounters, NoSourceGivesOnlyFlopPerSecond) {
  const Row row = run(WindowResult{}, 1e6, std::nullopt);
  EXPECT_EQ(row.counters.size(), 1u);
  EXPECT_TRUE(row.counters.count("FLOP/s"));
  EXPECT_TRUE(row.label.empty());
}

}  // namespace
