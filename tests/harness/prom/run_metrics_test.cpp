#include "harness/prom/run_metrics.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "harness/prom/families.h"
#include "tests/harness/cli_support.h"

using namespace flopwatt;
using namespace flopwatt::prom;

namespace {

EnergyFigures figures(double j, double flop) {
  EnergyFigures f;
  f.j = j;
  f.avg_power_w = j / 0.5;
  f.flop_per_j = flop / j;
  return f;
}

Measurement gemm_row(const std::string& backend, int m, double flop, const std::string& headline) {
  Measurement r;
  r.workload = "gemm";
  r.op = "gemm";
  r.backend = backend;
  r.shape = Shape{m, m, m};
  r.reps = 5;
  r.time_s.median = 0.1;
  r.flop = flop;
  r.flop_per_s = flop / 0.1;
  r.energy["rapl-powercap:package-0"] = figures(2.0, flop * 5);
  r.energy["battery:BAT0"] = figures(4.0, flop * 5);
  r.headline_source = headline;
  return r;
}

// A run whose rows judged different sources (its summary, derived from them, is "mixed").
flopwatt::Run mixed_run() {
  flopwatt::Run run;
  run.run_id = "r1";
  run.complete = true;
  run.context = {{"hostname", "laptop"}, {"machine_label", "fleet-7"}, {"started_utc", "2026-01-02T03:04:05Z"}};
  run.power_sources = {{"rapl-powercap:package-0", "package", "counter", true}, {"battery:BAT0", "battery", "gauge", true}};
  run.measurements.push_back(gemm_row("cpu:reference", 64, 1e6, "rapl-powercap:package-0"));
  run.measurements.push_back(gemm_row("cpu:reference", 128, 8e6, "battery:BAT0"));
  run.measurements.push_back(gemm_row("cpu:reference", 64, 2e6, "rapl-powercap:package-0"));  // repeats the first config
  Measurement skipped = gemm_row("cpu:onednn", 64, 1e6, "");
  skipped.skipped = "not built";
  run.measurements.push_back(skipped);
  return run;
}

}  // namespace

TEST(RunMetrics, EachRowTakesItsOwnJudgedHeadlineNotTheRunSummary) {
  const auto rows = result_rows(mixed_run());
  ASSERT_EQ(rows.size(), 2u);  // one per configuration, the skipped row left out
  EXPECT_EQ(rows[0].machine, "fleet-7");
  EXPECT_EQ(rows[0].config, "gemm 64x64x64");
  ASSERT_TRUE(rows[0].source);
  EXPECT_EQ(*rows[0].source, "rapl-powercap:package-0");
  EXPECT_DOUBLE_EQ(*rows[0].energy_j, 2.0);
  EXPECT_DOUBLE_EQ(*rows[0].flop_per_j, 2e6 * 5 / 2.0);  // the later row of the config wins
  EXPECT_DOUBLE_EQ(rows[0].flop_per_s, 2e7);
  EXPECT_EQ(*rows[1].source, "battery:BAT0");
  EXPECT_DOUBLE_EQ(*rows[1].energy_j, 4.0);
}

TEST(RunMetrics, NoHeadlineNoEnergyFigure) {
  flopwatt::Run run = mixed_run();
  for (auto& m : run.measurements) {
    m.headline_source.reset();
    m.headline_why = "nothing qualified";
  }
  for (const auto& r : result_rows(run)) {
    EXPECT_FALSE(r.source);
    EXPECT_FALSE(r.flop_per_j);
  }
  const std::string text = to_text(result_families(result_rows(run), true));
  EXPECT_EQ(text.find("flopwatt_result_flop_per_joule"), std::string::npos) << text;
  EXPECT_NE(text.find("flopwatt_result_flop_per_second{machine=\"fleet-7\""), std::string::npos) << text;
}

TEST(RunMetrics, PushedFamiliesPassPromtool) {
  if (!std::filesystem::exists("/usr/bin/promtool")) {
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL() << "promtool missing (Debian package prometheus) under CI=true";
    GTEST_SKIP() << "promtool not found (install the Debian package prometheus, listed in scripts/packages.txt)";
  }
  const std::string text = to_text(run_push_families(mixed_run()));
  EXPECT_NE(text.find("flopwatt_run_window_energy_joules_bucket{source=\"battery:BAT0\",le=\"10\"} 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("flopwatt_run_window_energy_joules_count{source=\"rapl-powercap:package-0\"} 2"), std::string::npos)
      << text;
  const auto dir = flopwatt::testing::temp_dir("prom", "promtool");
  std::ofstream(dir / "run.prom") << text;
  const auto r = flopwatt::testing::run_command_line("promtool check metrics < " + (dir / "run.prom").string());
  EXPECT_EQ(r.code, 0) << r.out << r.err << text;
  EXPECT_EQ(r.out + r.err, "") << text;  // no lint complaint either
}
