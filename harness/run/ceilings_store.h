// This machine's last measured ceilings, kept between runs: `run peak` stores
// them (per thread count) in a file named after the host and CPU under the
// peak directory, and `run gemm` / `run gpt2` reuse that file while it is
// recent, or measure a short peak and DRAM bandwidth and store that instead.
// run.json's context.roofline says which file was used and its age.
#pragma once
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/run/roofline.h"
#include "workloads/backend.h"

namespace flopwatt {

// $FLOPWATT_PEAK_DIR, else $XDG_CACHE_HOME/flopwatt/peaks (~/.cache/flopwatt/peaks),
// never the working directory.
std::string peak_dir();
// <dir>/<host>-<cpu model>.json, reduced to [A-Za-z0-9._-].
std::string peak_file(const std::string& dir, const std::string& host, const std::string& cpu);

// A stored file older than this is measured again (a week: a BIOS, kernel or
// governor change is the usual reason a machine's ceilings move).
inline constexpr double kPeakMaxAgeS = 7 * 24 * 3600.0;

// Format 2 added the stream patterns of the step's ops and each cache level's
// capacity; format 3 the exp rate. An older file still loads, but is measured
// again rather than reused (its DRAM-only roofs are what ops exceeded; without
// the exp rate GELU and the softmaxes are held to the FMA peak at one FLOP per exp).
inline constexpr int kStoredPeakFormat = 3;

struct StoredPeak {
  int format = kStoredPeakFormat;  // 1 for files written before it was recorded
  std::string host, cpu, kernel, run_id;
  std::string measured_by;  // "run peak" or "short, by run gemm" ...
  std::time_t measured_at = 0;
  std::vector<Ceilings> by_threads;
};
nlohmann::json to_json(const StoredPeak& p);
// nullopt when the text is not a stored peak (a damaged file is measured again).
std::optional<StoredPeak> stored_peak_from_json(const nlohmann::json& j);

// Writes the file atomically; false (with the reason in *why) when it cannot.
bool write_stored_peak(const std::string& file, const StoredPeak& p, std::string* why);

// The ceilings a store keeps: every fresh entry, and each old one unless a
// fresh entry has its thread count and could be its placement
// (same_placement over their core_round_trip_ns). On a virtual machine whose
// vCPUs move between placements, each placement keeps the ceilings last
// measured in it; entries without probes are replaced by any fresh one. A
// fresh entry measured while the vCPUs moved (its probes in two placements,
// one_placement) replaces only entries without probes: its streams were
// measured in either placement, and replacing a placement's own set with it
// could lower that placement's roofs.
std::vector<Ceilings> merge_by_placement(std::vector<Ceilings> fresh, const std::vector<Ceilings>& old);

// The probe of the cores' round trip a run's context took when it opened
// (collect_context), as a set of probes: empty when that probe did not finish.
std::vector<double> start_trip(const nlohmann::json& run_context);

// What a measurement's probes of the cores' round trip (first at its start,
// last at its end) say when they lie in two placements (one_placement): that
// the vCPUs moved while it ran and what a store does with it; "" otherwise.
std::string moved_note(const std::vector<double>& probes_ns);

// Stores what a `run peak` run measured, for every thread count it has, in
// this machine's file under peak_dir(), beside what the file held for other
// placements (merge_by_placement). Returns the file, or "" with the reason in *why.
// *note, when given, is moved_note of the run's start and end probes.
std::string store_peak_run(const Run& run, const std::string& root, std::string* why, std::string* note = nullptr);

struct HostCeilings {
  std::optional<Ceilings> ceilings;  // nullopt when neither reuse nor measuring gave any
  std::string from;                  // the file reused, or "measured now (...)"
  std::optional<double> age_s;       // of the oldest stored set reused
};
// The ceilings at `threads` from `file` when it exists, is for this host and
// CPU, and holds sets at that thread count measured within max_age_s of `now`,
// one of them in the placement of `trip_ns` (this run's probe of the cores'
// round trip; empty: any; a set without probes may be any): the best of the
// current sets (best_of_placements), aged as the oldest of them. Else
// nullopt with the reason in *why.
std::optional<HostCeilings> reuse_stored(const std::string& file, const std::string& host, const std::string& cpu,
                                         int threads, std::time_t now, double max_age_s, std::string* why,
                                         const std::vector<double>& trip_ns = {});

// This machine's stored ceilings at the current thread count, never
// measured here (flopwatt_bench must not spend seconds on a peak between
// benchmarks), also where the current placement has none (then `from` says
// so); nullopt with the reason in *why.
std::optional<HostCeilings> stored_host_ceilings(const std::string& root, std::string* why);

// Reuses this machine's stored ceilings once the current placement has been
// measured, or measures a short peak and every stream at every level at the
// current thread count (about two seconds) and stores them beside the other
// placements' (a failure to store is a note in `from`, not an error). `root` is the
// filesystem root the CPU model and cache topology are read under;
// start_trip_ns is the run's own probe (start_trip): the placement picked and
// the first probe a measured set is stored with, taken once per run.
HostCeilings host_ceilings(const std::string& root, const std::string& measured_by,
                           const std::vector<double>& start_trip_ns);

// The exp rate ceiling: the kernels' exp (gpt2::exps_until) on `threads`
// threads for about `seconds`, timed as the peak is (cpu::best_throughput).
double measure_exp_rate(int threads, double seconds);

// A simulated backend's device model as ceilings (peak, DDR rate, energy
// coefficients); nullopt for a backend with no model.
std::optional<Ceilings> modelled_ceilings(const Backend& b, DType dtype);

// The ceilings of a run on `backends` and run.json's context.roofline for them.
// measure_host false leaves the host out (--no-peak).
RooflineSet settle_roofline(const std::vector<const Backend*>& backends, DType dtype, const std::string& root,
                            bool measure_host, const std::string& measured_by, const std::vector<double>& start_trip_ns,
                            nlohmann::json* context);

}  // namespace flopwatt
