// Where each measurement sits against this machine's ceilings (the roofline
// model of Williams, Waterman and Patterson, CACM 2009): arithmetic intensity
// is FLOPs per analytic DRAM byte, the attainable rate at that intensity is
// min(peak FLOP/s, intensity x DRAM bandwidth), and the measured rate is a
// fraction of it. The energy roofline (Choi, Bedard, Fowler and Vuduc, IPDPS
// 2013) does the same for FLOP/J with a machine's energy per FLOP, energy per
// DRAM byte and constant power, fitted here from its own measurements.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/output/run_model.h"

namespace flopwatt {

// Energy ceilings: E = j_per_flop x FLOP + j_per_byte x bytes + constant_w x t.
struct EnergyFit {
  double j_per_flop = 0, j_per_byte = 0, constant_w = 0;
  // Standard errors of the three coefficients (sigma^2 (X'X)^-1, sigma^2 from
  // the residuals over n - 3 degrees of freedom).
  double se_j_per_flop = 0, se_j_per_byte = 0, se_constant_w = 0;
  double rms_relative_error = 0;  // of the fitted energies against the measured
  int points = 0;
};
struct MemoryCeiling {
  std::string name;        // "dram_read", "l2_triad", ...: the `run peak` row it comes from
  double bytes_per_s = 0;  // all threads together
};

// One machine's (or one modelled device's) ceilings at one thread count.
struct Ceilings {
  std::string label;                             // "cpu" or "npu:sim-phoenix (modelled)"
  int threads = 0;
  std::map<std::string, double> peak_flop_per_s;  // by dtype ("fp32", "bf16")
  std::vector<MemoryCeiling> memory;              // every level and stream measured
  // A device model's stated energy coefficients (simulated backends); the
  // host's are fitted per run instead (energy_roofline_json).
  std::optional<EnergyFit> modelled_energy;
  // The ceiling intensity is taken against: the fastest DRAM stream (the
  // bytes are compulsory DRAM traffic). nullopt when no DRAM row exists.
  std::optional<MemoryCeiling> dram() const;
  // The peak for a dtype; fp32's when that dtype has none measured (bf16 on a
  // CPU without AVX512-BF16 runs converted to fp32).
  std::optional<double> peak(const std::string& dtype) const;
};

struct RoofPoint {
  double intensity = 0;           // FLOP per byte
  double attainable_flop_per_s = 0;
  double fraction = 0;            // measured / attainable
  std::string bound;              // "compute" or "memory"
};
// nullopt unless flop, bytes, peak and bandwidth are all above 0. At the ridge
// (intensity x bandwidth == peak) the bound is "compute".
std::optional<RoofPoint> place_on_roof(double flop, double bytes, double flop_per_s, double peak_flop_per_s,
                                       double dram_bytes_per_s);

// The ceilings a `run peak` run measured at `threads`: the best peak row per
// dtype and the median rate (bytes / median time) of each verified bandwidth
// row. nullopt when the run has neither a peak nor a DRAM row at that count.
std::optional<Ceilings> ceilings_from_peak_run(const Run& peak_run, int threads);

nlohmann::json to_json(const Ceilings& c);
Ceilings ceilings_from_json(const nlohmann::json& j);

// The ceilings every measurement of a run is placed against: the host's, and
// per simulated backend its device model's.
struct RooflineSet {
  std::optional<Ceilings> host;
  std::map<std::string, Ceilings> modelled;  // by backend name
};
// DRAM bytes per repetition from the measurement's dram_read_bytes and
// dram_write_bytes counters; nullopt unless both were counted (and above 0),
// or for a simulated row (the host's memory controllers did not serve it).
std::optional<double> measured_dram_bytes(const Measurement& m);
// Sets intensity, roof, fraction_of_roof and roof_bound on a measurement that
// has FLOPs, bytes and a rate; leaves skipped, peak and bandwidth rows and a
// simulated GPT-2 step (CPU ops and modelled GEMMs mixed, no single roof) alone.
void place_measurement(Measurement& m, const RooflineSet& roofs);

struct EnergySample {
  double flop = 0, bytes = 0, seconds = 0, joules = 0;
};
// Least squares on the samples, each row scaled by 1/joules so that every
// measurement weighs by its relative error (a long GEMM does not drown the
// small ops). nullopt with fewer than 4 samples or a singular system (for
// example every sample with the same intensity and rate).
std::optional<EnergyFit> fit_energy(const std::vector<EnergySample>& samples);
// FLOP/J attainable at an intensity: one FLOP costs j_per_flop, 1/intensity
// bytes and the constant power for 1/attainable seconds.
double energy_roof_flop_per_j(const EnergyFit& f, double intensity, double attainable_flop_per_s);

// The run's energy roofline: the fit over its real (not simulated) rows with
// energy from `source`, and each simulated backend's modelled coefficients.
// Null when there is nothing to fit or model.
nlohmann::json energy_roofline_json(const Run& run, const std::optional<std::string>& source,
                                    const RooflineSet& roofs);

}  // namespace flopwatt
