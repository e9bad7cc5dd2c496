// The mains-vs-battery campaign's pieces that do not run anything: the power
// supply snapshot, the suites (which `flopwatt run ...` invocations a phase
// makes), the cool-down rule, and the comparison of the two phases' runs in
// the table shape of Rösti & Franz (2025): per op and backend, FLOP/s and
// FLOP/J on mains and on battery, speedups backend vs backend within each
// state, and the mains/battery ratios. harness/cli/cmd_campaign.cpp runs it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/analysis/report.h"
#include "power/temperature.h"

namespace flopwatt {

struct SupplySnapshot {
  std::optional<bool> ac_online;       // nullopt: no supply tells
  bool ac_inferred = false;            // guessed from the battery status (no adapter entry)
  bool has_battery = false;
  std::optional<double> battery_percent;
  std::optional<double> battery_energy_wh;
  std::string battery_status;          // of the first battery; "" without one
  double t_s = 0;                      // seconds since the campaign started
};
SupplySnapshot read_supply(const std::string& root, double t_s);
// "mains" | "battery" | "unknown"
std::string supply_state(const SupplySnapshot& s);
nlohmann::json to_json(const SupplySnapshot& s);

struct BackendChoice {
  std::string name;
  bool available = false;
  bool simulated = false;
};

// Everything a suite's command lines depend on, so they can be checked without a machine.
struct SuiteSpec {
  std::string suite;              // gemm-smoke | gemm-gpt2 | gpt2-step | paper
  std::string shapes;             // gemm suites: overrides the suite's shapes
  std::string backends;           // gemm suites: overrides "every available backend"
  std::string gpt2_model;         // gpt2 suites: overrides the preset (tests use "tiny")
  int gpt2_steps = 0;             // gpt2 suites: overrides the step count (0: the suite's)
  bool have_gpt2 = true;          // `run gpt2` exists in this build
  std::vector<BackendChoice> backend_list;  // every backend, in registry order
  std::string fastest_cpu;        // the default CPU GEMM backend (empty: none)
};

// One `flopwatt run ...` of a phase; its run dir is <state>/ (single part) or <state>/<name>/.
struct SuitePart {
  std::string name;
  std::vector<std::string> args;  // after the binary: {"run", "gemm", ...}
  std::string note;               // e.g. "GEMMs on the NPU simulator (simulated)"
};
// Throws InputError naming --suite (unknown suite, or one this build or machine cannot run).
std::vector<SuitePart> suite_parts(const SuiteSpec& s);
std::vector<std::string> suite_names();

// Cooled down when every sensor seen at both times is within margin_c of its start reading.
struct CooldownCheck {
  bool reached = true;
  double worst_excess_c = 0;  // hottest reading minus (start + margin); <= 0 when reached
  std::string worst_sensor;
};
CooldownCheck check_cooldown(const std::vector<power::Temperature>& start, const std::vector<power::Temperature>& now,
                             double margin_c);

struct ComparisonOptions {
  std::string baseline_backend;  // empty: baseline_backend() rule of harness/analysis/report.h per configuration
};
// mains and battery: every run of each phase (a suite may have several parts).
nlohmann::json compare_mains_battery(const std::vector<LoadedRun>& mains, const std::vector<LoadedRun>& battery,
                                     const ComparisonOptions& o);
std::string comparison_csv(const nlohmann::json& comparison);
std::string comparison_markdown(const nlohmann::json& comparison);

// Rösti & Franz (2025, arXiv 2504.03083)'s four headline figures, taken the
// same way from a comparison of GPT-2 runs with the GEMMs on llm.c's CPU matmul
// (cpu:llmc) and on an NPU backend (the device, or a simulator, labelled):
// GEMM speedup per GPT-2 GEMM on mains (paper: 2.8-3.1x), training-step
// speedup on mains (1.7x) and on battery (1.2x), step FLOP/J ratio on battery
// (1.4x). A figure the comparison cannot give is null with the reason.
nlohmann::json paper_figures(const nlohmann::json& comparison);
std::string paper_markdown(const nlohmann::json& figures);
// `report --paper`: the runs split by the supply each started on (a run from
// a machine without a power supply class counts as on mains, and
// "assumed_mains" says how many did), compared with cpu:llmc the baseline as
// the study did, and paper_figures of that, with "runs" counting each side.
nlohmann::json paper_report(const std::vector<LoadedRun>& runs);
// "mains" or "battery" from a run's context at its start (ac_online, else the
// battery's status); nullopt on a machine without a power supply class.
std::optional<std::string> run_supply_state(const Run& run);

}  // namespace flopwatt
