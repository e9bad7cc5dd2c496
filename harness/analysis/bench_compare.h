// `flopwatt report A.json B.json` on two `flopwatt_bench --benchmark_format=json`
// files: per benchmark name, the repetitions of A (the baseline) and B compared
// on time and on flopwatt's energy counters, with the two-sided Mann-Whitney U
// test Google Benchmark's tools/compare.py runs on times (same minimum of 2
// repetitions, same warning below 9, alpha 0.05 unless given).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/analysis/utest.h"

namespace flopwatt {

// compare.py's thresholds (tools/gbench/report.py: UTEST_MIN_REPETITIONS,
// UTEST_OPTIMAL_REPETITIONS) and its default alpha.
inline constexpr std::size_t kUTestMinReps = 2;
inline constexpr std::size_t kUTestOptimalReps = 9;
inline constexpr double kUTestAlpha = 0.05;

struct BenchFile {
  std::string path;
  nlohmann::json doc;
};

// True when path is a regular file holding a JSON object with a "benchmarks"
// array (Google Benchmark's JSON reporter); never throws.
bool is_bench_json(const std::string& path);
// Reads one; throws InputError naming the file (unreadable, not JSON, no benchmarks array).
BenchFile load_bench_json(const std::string& path);

struct MetricComparison {
  std::string metric;           // "real_time", "cpu_time" or the counter's name ("W", "FLOP/J", ...)
  std::string unit;             // "s" for times, else the counter's own
  bool higher_is_better = false;
  bool energy = false;          // one of flopwatt's energy counters
  std::vector<double> a, b;     // one value per repetition
  double median_a = 0, median_b = 0;
  double change = 0;            // (median_b - median_a) / |median_a|, as compare.py's change
  std::optional<UTestResult> utest;  // absent below kUTestMinReps repetitions on a side
  bool significant = false;     // utest && p < alpha
};

struct BenchRow {
  std::string name;
  std::size_t reps_a = 0, reps_b = 0;
  bool low_confidence_energy = false;  // a repetition's label says its energy window was low confidence
  std::string warning;                 // too few repetitions for the U test, or for a reliable one
  std::string energy_note;             // why energy is not compared (the loops name different sources)
  std::vector<MetricComparison> metrics;
};

struct BenchComparison {
  std::string file_a, file_b;
  std::string headline_a, headline_b;  // context flopwatt_power_headline
  double alpha = kUTestAlpha;
  std::vector<BenchRow> rows;           // names in both files, in A's order
  std::vector<std::string> only_a, only_b;
  std::vector<std::string> notes;       // e.g. energy counters from different sources
};

BenchComparison compare_bench(const BenchFile& a, const BenchFile& b, double alpha = kUTestAlpha);

std::string bench_comparison_markdown(const BenchComparison& c);
nlohmann::json bench_comparison_json(const BenchComparison& c);
std::string bench_comparison_csv(const BenchComparison& c);

}  // namespace flopwatt
