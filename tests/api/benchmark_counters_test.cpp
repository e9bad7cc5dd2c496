// flopwatt/benchmark.h's set_counters, the one function a user's Google
// Benchmark suite and flopwatt_bench set their counters through, on windows
// built by hand and run through Google Benchmark itself.
#include "flopwatt/benchmark.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

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
Row run(const WindowResult& r, double flop_per_iter, bool all = false) {
  static int n = 0;
  const std::string name = "set_counters_" + std::to_string(n++);
  benchmark::ClearRegisteredBenchmarks();
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
    for (auto _ : st) benchmark::DoNotOptimize(n);
    flopwatt::gbench::set_counters(st, r, flop_per_iter, all);
  })->Iterations(4);
  Capture c;
  benchmark::RunSpecifiedBenchmarks(&c);
  EXPECT_EQ(c.rows.size(), 1u);
  return c.rows.empty() ? Row{} : c.rows.front();
}

constexpr double kFlopPerIter = 1e6, kIters = 4, kWindowS = 0.4;

// A source's figures over the 0.4 s window of 4 iterations of 1e6 FLOP at `w` watts.
SourceFigure source(const std::string& id, const std::string& domain, double w) {
  SourceFigure s;
  s.id = id;
  s.domain = domain;
  s.avg_power_w = w;
  s.energy_j = w * kWindowS;
  s.flop_per_j = kFlopPerIter * kIters / s.energy_j;
  return s;
}

WindowResult two_sources(const std::optional<std::string>& headline) {
  WindowResult r;
  r.duration_s = kWindowS;
  r.flop = kFlopPerIter * kIters;
  r.sources = {source("battery:BAT0", "battery", 20), source("rapl:package-0", "package", 10)};
  r.headline = headline;
  r.headline_why = headline ? "widest domain" : "battery:BAT0 refused: not discharging; rapl:package-0: does not advance";
  r.supply = "battery";
  if (headline) {
    const auto& s = *headline == "battery:BAT0" ? r.sources[0] : r.sources[1];
    r.energy_j = s.energy_j;
    r.avg_power_w = s.avg_power_w;
    r.flop_per_j = s.flop_per_j;
  }
  return r;
}

TEST(SetCounters, TheLoopsOwnHeadlineGivesThePlainCountersAndTheLabelNamesIt) {
  const Row row = run(two_sources("battery:BAT0"), kFlopPerIter);
  EXPECT_DOUBLE_EQ(row.counters.at("J/iter"), 2.0);
  EXPECT_DOUBLE_EQ(row.counters.at("W"), 20.0);
  EXPECT_DOUBLE_EQ(row.counters.at("FLOP/J"), 5e5);
  EXPECT_FALSE(row.counters.count("rapl:package-0:W")) << "other sources only with all_sources";
  EXPECT_FALSE(row.counters.count("supply_changed"));
  EXPECT_EQ(row.label, "energy from battery:BAT0");
  EXPECT_EQ(flopwatt::label_source(row.label), "battery:BAT0");
}

// Each loop is judged on its own: a loop whose window refused the battery (it stopped
// discharging) has the package's figures, and its label says so; no suite-wide source
// chosen before any loop ran takes them away.
TEST(SetCounters, ALoopWhoseHeadlineIsAnotherSourceGetsThatSourcesCounters) {
  WindowResult r = two_sources("rapl:package-0");
  r.sources[0].why_low = "battery:BAT0 is not discharging (Charging)";
  r.sources[0].flop_per_j.reset();
  const Row row = run(r, kFlopPerIter);
  EXPECT_DOUBLE_EQ(row.counters.at("J/iter"), 1.0);
  EXPECT_DOUBLE_EQ(row.counters.at("W"), 10.0);
  EXPECT_EQ(flopwatt::label_source(row.label), "rapl:package-0") << row.label;
}

TEST(SetCounters, NoHeadlineGivesNoEnergyCountersAndSaysWhy) {
  const Row row = run(two_sources(std::nullopt), kFlopPerIter);
  for (const auto& [k, v] : row.counters) EXPECT_EQ(k, "FLOP/s");
  EXPECT_NE(row.label.find("no energy counters: battery:BAT0 refused"), std::string::npos) << row.label;
  EXPECT_FALSE(flopwatt::label_source(row.label));
}

// FLOP/s is over the window's wall time, not Google Benchmark's CPU time: the loop sleeps, so
// its CPU time is a fraction of its wall time, and FLOP/J x W still equals FLOP/s.
TEST(SetCounters, FlopPerSecondIsOverTheWallTimeSoFlopPerJouleTimesWattsIsFlopPerSecond) {
  WindowResult r = two_sources("battery:BAT0");
  benchmark::ClearRegisteredBenchmarks();
  benchmark::RegisterBenchmark("sleeping_loop", [&](benchmark::State& st) {
    for (auto _ : st) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    flopwatt::gbench::set_counters(st, r, kFlopPerIter);
  })->Iterations(4);
  Capture c;
  benchmark::RunSpecifiedBenchmarks(&c);
  ASSERT_EQ(c.rows.size(), 1u);
  const auto& k = c.rows[0].counters;
  EXPECT_DOUBLE_EQ(k.at("FLOP/s"), kFlopPerIter * kIters / kWindowS);
  EXPECT_NEAR(k.at("FLOP/J") * k.at("W"), k.at("FLOP/s"), 1e-9 * k.at("FLOP/s"));
}

TEST(SetCounters, ASupplyChangeTakesEveryEnergyCounterOff) {
  WindowResult r = two_sources("battery:BAT0");
  r.supply = "changed";
  const Row row = run(r, kFlopPerIter, /*all=*/true);
  EXPECT_DOUBLE_EQ(row.counters.at("supply_changed"), 1.0);
  for (const auto& [k, v] : row.counters) EXPECT_TRUE(k == "supply_changed" || k == "FLOP/s") << k;
  EXPECT_NE(row.label.find("power supply changed"), std::string::npos) << row.label;
}

TEST(SetCounters, AllSourcesArePrefixedAndALowConfidenceHeadlineIsLabelled) {
  WindowResult r = two_sources("battery:BAT0");
  r.sources[0].low_confidence = true;
  r.sources[0].why_low = "2 samples in the window";
  const Row row = run(r, kFlopPerIter, /*all=*/true);
  EXPECT_DOUBLE_EQ(row.counters.at("J/iter"), 2.0);
  EXPECT_DOUBLE_EQ(row.counters.at("rapl:package-0:J/iter"), 1.0);
  EXPECT_DOUBLE_EQ(row.counters.at("rapl:package-0:W"), 10.0);
  EXPECT_FALSE(row.counters.count("battery:BAT0:W")) << "the headline is not repeated under its id";
  EXPECT_EQ(row.label, "energy from battery:BAT0; low confidence: 2 samples in the window");
  EXPECT_EQ(flopwatt::label_source(row.label), "battery:BAT0");
}

TEST(SetCounters, NoSourceGivesOnlyFlopPerSecond) {
  WindowResult r;
  r.duration_s = kWindowS;
  const Row row = run(r, kFlopPerIter);
  EXPECT_EQ(row.counters.size(), 1u);
  EXPECT_DOUBLE_EQ(row.counters.at("FLOP/s"), kFlopPerIter * kIters / kWindowS);
  EXPECT_TRUE(row.label.empty());
}

}  // namespace
