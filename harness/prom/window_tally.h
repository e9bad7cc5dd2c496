// A Meter's judged windows tallied per window name for its Pushgateway push
// (MeterOptions::pushgateway, flopwatt/meter.h): cumulative histograms, so a
// meter living through a days-long run pushes a group of fixed size.
// Plain values: built with or without prometheus-cpp.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace flopwatt::prom {

// Upper bounds (+Inf is implicit), joules: a short GEMM window to a long training step.
inline const std::vector<double> kWindowEnergyBounds = {0.01, 0.1, 1, 10, 100, 1000, 10000, 100000};
// Upper bounds, seconds: a millisecond kernel to a few hours' epoch.
inline const std::vector<double> kWindowDurationBounds = {0.001, 0.01, 0.1, 1, 10, 100, 1000, 10000};

struct Histogram {
  std::vector<std::uint64_t> cumulative;  // per bound: observations <= it
  std::uint64_t count = 0;
  double sum = 0;
  void observe(double v, const std::vector<double>& bounds);
};

struct WindowTally {
  Histogram duration_s;                        // every judged window of the name
  std::map<std::string, Histogram> energy_j;   // per headline source: the windows that had one
  std::map<std::string, double> flop;          // per headline source: the FLOP of those windows
};

// Adds one judged window. `source` and `energy_j` are its headline figure, or
// nullopt when it had none: then it counts in the durations only, as a
// window with no figure is not a window of zero joules.
void tally(std::map<std::string, WindowTally>& tallies, const std::string& name, double duration_s,
           const std::optional<std::string>& source, std::optional<double> energy_j, double flop);

}  // namespace flopwatt::prom
