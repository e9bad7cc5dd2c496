// The in-memory Run every reporter writes from (ARCHITECTURE.md, "The report contract").
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/backend.h"

namespace flopwatt {

struct TimeStats {
  double median = 0, p10 = 0, p90 = 0, total = 0, mean = 0, min = 0, max = 0;
  double ci95_lo = 0, ci95_hi = 0;  // 95% CI of the median (order statistics)
};

struct EnergyFigures {
  double j = 0;
  double avg_power_w = 0;
  std::optional<double> net_j;           // j - idle power x time, when an idle baseline exists
  std::optional<double> flop_per_j;
  std::optional<double> flop_per_j_net;
  std::string confidence = "ok";         // "ok" | "low"
  std::string why_low;
  // The source was gone for part of the window (reads failing: a battery
  // removed): no energy was measured there, so the figure is no figure.
  bool gap = false;
};

struct Shape {
  std::int64_t M = 0, N = 0, K = 0;
};

struct Measurement {
  std::string workload;                  // "gemm" | "gpt2"
  std::string op;
  std::optional<std::string> pass;       // "fwd" | "bwd" | "opt"
  std::optional<int> layer;
  std::optional<int> step;
  std::string backend;
  std::string dtype = "fp32";
  std::optional<Shape> shape;
  std::optional<std::string> layout;     // "NN", "NT", "TN", "TT" for GEMMs
  std::optional<int> count_per_step;     // how often a GEMM occurs in one training step
  std::optional<int> threads;           // OpenMP threads of the host side
  bool simulated = false;
  int reps = 0;
  TimeStats time_s;
  std::vector<double> rep_times_s;       // every repetition, kept
  double flop = 0;                       // per repetition
  std::optional<double> bytes;           // analytic bytes moved per repetition
  // exps evaluated per repetition (among the FLOPs), where the op table
  // counts them: their roof includes exps over the measured exp rate.
  std::optional<double> exps;
  double flop_per_s = 0;                 // flop / median repetition time
  // flop x reps / total time of the repetitions: the basis FLOP/J shares
  // (both over the same window); absent in runs written before it existed.
  std::optional<double> flop_per_s_window;
  std::optional<double> rep_max_over_median;
  std::optional<bool> stalled;           // a repetition took > kStallRatio x the median
  std::optional<double> fraction_of_peak;
  // The roofline (harness/run/roofline.h): FLOP per analytic byte, the rate
  // attainable at that intensity, the measured share of it and which ceiling
  // binds ("compute" or "memory").
  std::optional<double> intensity;
  std::optional<double> roof_flop_per_s;
  std::optional<double> fraction_of_roof;
  std::optional<std::string> roof_bound;
  // Which memory ceiling the roof is over ("llc_triad", "dram_r1u3"; for a
  // GPT-2 step "ops": the sum of its ops' roofs), chosen by the op's stream
  // pattern (a cpu::stream_name) at the level holding its working set (bytes
  // one repetition touches); roof_time_s = max(FLOP / peak, bytes / bandwidth,
  // exps / exp rate) per repetition, the time the op would take at its roof.
  std::optional<std::string> memory_pattern;
  // The precision whose FLOP peak the roof is over: dtype, except where the
  // row's arithmetic runs in another precision (a GPT-2 op outside the GEMMs
  // computes in fp32 whatever its run's GEMM dtype). Set by placement.
  std::optional<std::string> roof_peak_dtype;
  std::optional<double> working_set_bytes;
  std::optional<std::string> roof_ceiling;
  std::optional<double> roof_time_s;
  // Per repetition, from the dram_read_bytes + dram_write_bytes counters; when
  // present the intensity and roof are over these bytes (intensity_basis
  // "measured"), else over the analytic ones ("analytic").
  std::optional<double> dram_bytes_measured;
  std::optional<std::string> intensity_basis;
  // Hardware counters over the measurement's window, by libpfm4 event string,
  // summed over its repetitions; null where the event could not be counted.
  std::map<std::string, std::optional<double>> counters;
  std::optional<bool> verified;
  std::optional<double> verify_rel_err;
  std::optional<double> loss;
  std::optional<Breakdown> breakdown_s;
  std::map<std::string, EnergyFigures> energy;  // by source id
  std::optional<std::string> skipped;    // reason, when the configuration could not run
  // CLOCK_MONOTONIC edges [t0, t1] of the timed loop (the energy window), on
  // the clock of samples.csv, so a plot can shade each measurement's region.
  std::optional<std::array<std::int64_t, 2>> window_ns;
  // The supply state (mains/battery, a battery's status) changed inside
  // window_ns, or may have; null when the run did not watch the supply.
  std::optional<bool> supply_changed;
  // A GPT-2 step row's cores' round trip (cpu/core_trip.h), probed right
  // after the step, outside its window: the vCPU placement can change while
  // a run goes on, and the memory-bound ops' times with it. Null with one
  // thread, for a simulated backend, or when the probe could not finish.
  std::optional<double> core_round_trip_ns;
  // The source this window's headline FLOP/J is from, as the run judged it
  // (power::choose_headline over the window's figures); null when nothing
  // qualified, or in runs written before it was recorded (then
  // harness/output/headline_view.h applies the rule to the stored figures).
  std::optional<std::string> headline_source;
  std::optional<std::string> headline_why;
};

struct PowerSourceInfo {
  std::string id, domain, kind;
  bool available = false;
  std::optional<std::string> reason = {}, fix = {};
  std::optional<double> update_interval_s = {};
  bool simulated = false;
  std::vector<std::string> contains = {};
  std::optional<std::string> note = {};  // how the source is read, and its caveats
};

struct IdleFigure {
  double power_w = 0, duration_s = 0;
  // The spread of the idle baseline: the sample standard deviation of the
  // mean power of `windows` equal parts of the idle period; net energy must
  // clear it (harness/run/energy.h, apply_net).
  std::optional<double> sd_w;
  int windows = 0;
  // What the baseline rests on: samples inside the idle period, and the
  // supply ("mains"/"battery") it was taken on; a window's net figure uses it
  // only with enough samples and on the same supply (harness/run/energy.h).
  std::optional<int> samples = {};
  std::optional<std::string> supply = {};
};

struct Run {
  int schema_version = 2;  // 2: metric names from harness/output/metrics.h; 1 is still read
  std::string flopwatt_version;
  std::string run_id;
  bool complete = false;
  nlohmann::json context = nlohmann::json::object();
  std::vector<PowerSourceInfo> power_sources;
  std::map<std::string, IdleFigure> idle;
  // No run-level headline is kept: each measurement records its own (headline_source), and
  // run.json's run-level headline_source is derived from them when written (headline_view.h's
  // run_headline), so no surface can name a source the rows did not use.
  std::vector<Measurement> measurements;
  // The fitted and modelled energy ceilings (harness/run/roofline.h); null
  // when nothing could be fitted.
  nlohmann::json energy_roofline = nullptr;
};

// What each FLOP/s and FLOP/J figure is computed over, written into run.json.
// A roof is exceeded by more than noise above this fraction: then the stored
// ceilings were measured while the machine was busy, a ceiling misses a
// pattern or level, or a byte model counts bytes the op never moves.
inline constexpr double kRoofTolerance = 1.05;
// Rows of `ms` above kRoofTolerance of their roof, as
// "adamw opt (cpu:onednn): 120% of dram_r1u3".
std::vector<std::string> rows_above_roof(const std::vector<Measurement>& ms);
// The warning line (no newline) every front end prints for such a row.
std::string above_roof_warning(const std::string& row);

nlohmann::json figures_basis();
nlohmann::json to_json(const Measurement& m);
nlohmann::json to_json(const Run& r);
Measurement measurement_from_json(const nlohmann::json& j);
Run run_from_json(const nlohmann::json& j);

// What a measurement measured, without the backend: every configuration field
// (workload, op, pass, layer, dtype, shape, layout, threads, FLOP count), so
// rows of different runs or backends with the same key are comparable and
// rows that differ in any of them (2 threads against 1) stay apart.
std::string config_key(const Measurement& m);
// Readable name of the configuration for tables: "qkv fwd 256x2304x768", "step", "attn bwd L3".
std::string config_label(const Measurement& m);

}  // namespace flopwatt
