// flopwatt_bench's runs in the results store (harness/store/store.h): a
// display reporter that passes everything to Google Benchmark's own (so
// --benchmark_format is unchanged) and keeps each benchmark's repetitions,
// turned into one Run with a measurement per benchmark name at the end.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "harness/output/run_model.h"

namespace flopwatt::gbench {

class RecordingReporter : public benchmark::BenchmarkReporter {
 public:
  explicit RecordingReporter(benchmark::BenchmarkReporter* display) : display_(display) {}
  bool ReportContext(const Context& c) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

  // One measurement per benchmark name: its repetitions' times per
  // iteration, FLOP from the FLOP/s counter, and as its energy the J/iter, W
  // and FLOP/J (medians) of the repetitions whose label names the source most
  // of them named (each loop's own judged headline), that source its
  // headline_source.
  std::vector<Measurement> measurements(int threads) const;

 private:
  struct Sample {
    double s_per_iter = 0;
    std::map<std::string, double> counters;
    std::optional<std::string> source;  // the energy source its label names
  };
  std::unique_ptr<benchmark::BenchmarkReporter> display_;
  std::vector<std::string> order_;
  std::map<std::string, std::vector<Sample>> samples_;
};

}  // namespace flopwatt::gbench
