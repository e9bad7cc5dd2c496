// A run's results as Prometheus metrics, under the names both `flopwatt
// serve` (the latest stored result of each configuration) and a run's push
// use, so a dashboard reads one set of names whichever way they arrived.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "harness/output/run_model.h"
#include "harness/prom/window_tally.h"

namespace flopwatt::prom {

// One configuration's result in one run. FLOP/J and energy are the row's own
// judged headline figure (headline_of(run, m), harness/output/headline_view.h),
// absent when no source qualified for that window.
struct ResultRow {
  std::string machine, workload, op, config, backend, dtype;
  std::string run_id, started_utc;
  double flop_per_s = 0;
  double time_s = 0;  // median repetition time
  std::optional<std::string> source;
  std::optional<double> flop_per_j, energy_j;
};

// The machine a run was measured on, as a fleet names it: its --label
// (context.machine_label), else its hostname, else "unknown".
std::string machine_name(const Run& run);

// One row per configuration (config_label; the last row wins, so a GPT-2
// run's per-step rows give their last step); skipped rows are left out.
std::vector<ResultRow> result_rows(const Run& run);

// flopwatt_result_{flop_per_second,time_seconds,flop_per_joule,energy_joules}
// over `rows`, labelled workload, op, config, backend, dtype (and source for
// the energy figures), plus machine when `with_machine` (a push carries it
// in its grouping key instead: the gateway refuses a label it also groups by).
std::vector<prometheus::MetricFamily> result_families(const std::vector<ResultRow>& rows, bool with_machine);

// What a run pushes: its result families, a histogram of its windows'
// headline energy per source (as Zeus pushes its windows'), and whether it completed.
std::vector<prometheus::MetricFamily> run_push_families(const Run& run);

// What a Meter pushes (MeterOptions::pushgateway): per window name, a
// histogram of its windows' durations, and per headline source a histogram of
// their energy and the counter of their FLOP, so FLOP/J over a name's windows
// is flop_total / energy_joules_sum.
std::vector<prometheus::MetricFamily> meter_push_families(const std::map<std::string, WindowTally>& tallies);

}  // namespace flopwatt::prom
