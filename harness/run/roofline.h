// Where each measurement sits against this machine's ceilings (the roofline
// model of Williams, Waterman and Patterson, CACM 2009): arithmetic intensity
// is FLOPs per analytic byte, the attainable rate at that intensity is
// min(peak FLOP/s, intensity x bandwidth), and the measured rate is a fraction
// of it. The bandwidth is the one `run peak` measured for the op's stream
// pattern at the level of the memory hierarchy that holds its bytes (an op
// whose bytes fit the LLC is bounded by the LLC, not DRAM): a roof must be a
// ceiling, which a kernel with more streams than the benchmark, or data that
// stays in cache, would otherwise exceed. The energy roofline (Choi, Bedard, Fowler and Vuduc, IPDPS
// 2013) does the same for FLOP/J with a machine's energy per FLOP, energy per
// DRAM byte and constant power, fitted here from its own measurements.
#pragma once
#include <ctime>
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
  // What all `threads` threads keep in each cache level, by the level's name
  // prefix of `memory` ("l1", "l2", "llc"; cpu::level_capacities). Empty for
  // ceilings stored before levels were chosen (then every roof is DRAM's).
  std::map<std::string, double> capacity_bytes;
  // Exps per second of the kernels' exp (workloads/gpt2/exp_rate.h), all
  // threads together: the third ceiling of an op that evaluates exps. nullopt
  // in ceilings stored before it was measured, and for device models.
  std::optional<double> exp_per_s;
  // The cores' round trip (cpu/core_trip.h) when the measurement of these
  // ceilings started and when it ended, those probes that finished: on a
  // virtual machine the vCPU placement sets DRAM bandwidth and what one core
  // reads of what another wrote, so a run in another placement is held to
  // another machine's ceilings. Empty in ceilings stored before it was
  // recorded, and for device models.
  std::vector<double> core_round_trip_ns;
  // When these ceilings were measured (seconds since the epoch), for a set
  // kept in the peak file: each placement's set ages on its own, so a set
  // stays no longer than a week whenever the file is rewritten for another.
  // The best of several sets is as old as the oldest. 0: not recorded.
  std::time_t measured_at = 0;
  // A device model's stated energy coefficients (simulated backends); the
  // host's are fitted per run instead (energy_roofline_json).
  std::optional<EnergyFit> modelled_energy;
  // The ceiling intensity is taken against: the fastest DRAM stream (the
  // bytes are compulsory DRAM traffic). nullopt when no DRAM row exists.
  std::optional<MemoryCeiling> dram() const;
  // The ceiling of `pattern` (a cpu::stream_name, "" for none) at the
  // smallest level whose capacity holds working_set_bytes (DRAM when none
  // does, or the size is unknown: <= 0): the faster of the pattern's plain and
  // non-temporal rows there (a roof bounds the traffic, whichever store the
  // kernel picks), else the fastest row of that level, else dram().
  std::optional<MemoryCeiling> memory_for(const std::string& pattern, double working_set_bytes) const;
  // The peak for a dtype; fp32's when that dtype has none measured (bf16 on a
  // CPU without AVX512-BF16 runs converted to fp32).
  std::optional<double> peak(const std::string& dtype) const;
};

// Probes further apart than this factor are taken for another placement:
// on the 2-vCPU Zen 4 machine of docs/performance.md's "What a roof does not see" the
// two placements read 51-87 ns and 308-357 ns, and each kept within 1.7x.
inline constexpr double kPlacementRatio = 2.0;
// Whether two sets of round-trip probes can be one placement: either set is
// empty (unknown), or some probe of one is within kPlacementRatio of some
// probe of the other.
bool same_placement(const std::vector<double>& a_ns, const std::vector<double>& b_ns);
// Whether one measurement's probes all lie in one placement (every two within
// kPlacementRatio; none or one probe: yes). No when the vCPUs moved while it ran.
bool one_placement(const std::vector<double>& probes_ns);
// The ceilings of several placements of one machine at one thread count as
// one set: each peak, stream and the exp rate at the best any placement
// measured, and every placement's probes; as old as the oldest of them. A roof must hold in whichever
// placement an op runs: the vCPUs move while a run goes on, and an op can beat
// its own placement's DRAM stream when part of its data is still in the LLC
// (softmax_xent backward read 132% of the near placement's dram_update).
Ceilings best_of_placements(const std::vector<Ceilings>& sets);
// The run's probes of the cores' round trip (one per GPT-2 step) against
// those its ceilings were measured under: a one-line note when some run probe
// is further than kPlacementRatio from every ceilings' probe; nullopt when
// they agree, or either side has no probe.
std::optional<std::string> placement_note(const Ceilings& c, const std::vector<double>& run_trips_ns);

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
// dtype and the rate of each verified bandwidth row over its p10 time (the
// fastest tenth of its repetitions; the median where no p10 was kept). nullopt when the run has neither a peak nor a DRAM row at that count.
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
// Sets intensity, roof, fraction_of_roof, roof_bound, roof_ceiling and
// roof_time_s on a measurement that has bytes and a time (an op without FLOPs,
// zero_grad, gets only the time: its fraction is roof_time_s / median time);
// the ceiling is memory_for(memory_pattern, working_set_bytes, else bytes).
// A row with exps whose ceilings have an exp rate also takes exps / exp_per_s
// as a floor of its time: where that is the longest of the three, roof_bound
// is "exp" and the roof is the row's FLOPs over that time.
// Leaves skipped, peak and bandwidth rows and a GPT-2 step alone (its roof is
// the sum of its ops': step_roofline_limit).
void place_measurement(Measurement& m, const RooflineSet& roofs);

// The step's roofline limit: the sum of its ops' roof_time_s (each
// max(FLOP/peak, bytes/bandwidth, exps/exp rate), per step); nullopt when any op of the step
// has none. `ops` are the per-op rows of one step (layer totals).
std::optional<double> step_roofline_limit(const std::vector<Measurement>& ops);

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

// The run's energy roofline: the fit over its real (not simulated) rows whose
// own headline is `source` (session.cpp passes the source most rows use), and each simulated backend's modelled coefficients.
// Null when there is nothing to fit or model.
nlohmann::json energy_roofline_json(const Run& run, const std::optional<std::string>& source,
                                    const RooflineSet& roofs);

// The energy roofline's ceiling (FLOP/J) where a row sits, from the run's own
// energy_roofline: the host fit for a real row whose judged headline is the
// fit's source, the backend's modelled fit for a simulated row; nullopt when
// the row has no intensity or no fit speaks for it.
std::optional<double> energy_ceiling_of(const Run& run, const Measurement& m);

}  // namespace flopwatt
