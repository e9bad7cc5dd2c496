// What every `run ...` command does around its workload: context, output
// directory, power sampler and idle baseline before; final write, the closing
// lines and the exit status after.
#pragma once
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/run/energy.h"
#include "harness/run/run_options.h"
#include "harness/run/session.h"
#include "harness/prom/push.h"
#include "harness/store/store.h"
#include "power/supply_track.h"

namespace flopwatt {

// How often a run (and a flopwatt::Meter) polls the power supply: an ACPI
// round trip per poll, slow enough to cost nothing; plugging in is a
// human-scale event, and each judged window polls once more at its end.
inline constexpr double kSupplyPollS = 1.0;

struct OpenRun {
  std::unique_ptr<EnergyMeter> meter;
  std::unique_ptr<Session> session;
  std::string root;  // the filesystem root the run reads sensors under
  // The backends named in the context. They must outlive close_run, which
  // reads their notes again: some notes (cpu:onednn's per-shape choices) are
  // only known once the backend has run.
  std::vector<const Backend*> backends;
  // Watches mains/battery during the run (null on a machine without a
  // power supply class, a desktop or a VM): changes go into the context and
  // the measurements whose windows overlap one are flagged supply_changed.
  std::unique_ptr<power::SupplyMonitor> supply;
  // Where end_run records the finished run (--store, --no-store, --store-samples).
  store::RecordOptions record;
  // Where end_run pushes the finished run after recording it (--pushgateway).
  prom::PushOptions push;
};

// Builds the Run header (context incl. `extra_context`, power sources), creates
// the output directory, starts sampling and measures the idle baseline.
// Throws InputError for a bad --out or --power.
OpenRun open_run(const RunCommonOptions& o, const std::vector<const Backend*>& backends,
                 const nlohmann::json& extra_context);
// Stops sampling, writes the remaining samples and the final run.json.
void close_run(OpenRun& r, bool complete);

// open_run, then names the run on `out` ("flopwatt run <id> -> <dir>") so the
// directory is known while the run is still going.
OpenRun start_run(const RunCommonOptions& o, const std::vector<const Backend*>& backends,
                  const nlohmann::json& extra_context, std::FILE* out);

enum class RunEnding {
  kSummary,     // the pivot of every measurement (print_summary), ending with the report path
  kReportPath,  // the report path alone: the command has printed its own table
};
// close_run, then records the run in the results store (a store that cannot
// be written is a warning on stderr, never a changed status), then the
// closing lines on `out`. complete is false when the run
// was interrupted: stderr then says where the partial report is. Returns the
// exit status so far: 130 when interrupted, else 0.
int end_run(OpenRun& r, bool complete, std::FILE* out, RunEnding ending);

}  // namespace flopwatt
