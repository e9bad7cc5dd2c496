// Each CLI command registers itself on the CLI11 app; main() wires them up.
// A command's callback sets exit_code; errors are thrown (InputError -> exit 2).
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "harness/energy.h"

namespace flopwatt {

struct CliState {
  int exit_code = 0;
};

// Power and output options shared by every `run ...` command (ARCHITECTURE.md, "The report contract").
struct RunCommonOptions {
  PowerOptions power;
  std::string out;              // empty: results/runs/<run-id>
  bool overwrite = false;       // replace a run already in `out`
  double min_time_s = 0.2;
  bool min_time_set = false;    // user fixed --min-time: do not lengthen for gauges
  int min_reps = 5;
  int threads = 0;              // 0: all cores
};
void add_run_common_options(CLI::App* cmd, RunCommonOptions& o);
// Applies FLOPWATT_SYSFS_ROOT, validates values; throws InputError naming the flag.
void finalize_run_common_options(CLI::App* cmd, RunCommonOptions& o);

void register_run_gemm(CLI::App& run, CliState& st);      // harness/cmd_gemm.cpp
void register_run_default(CLI::App& run, CliState& st);   // harness/cmd_gemm.cpp
void register_run_peak(CLI::App& run, CliState& st);      // harness/cmd_peak.cpp
void register_backends(CLI::App& app, CliState& st);      // harness/cmd_backends.cpp
void register_sources(CLI::App& app, CliState& st);       // harness/cmd_sources.cpp
void register_npu(CLI::App& app, CliState& st);           // harness/cmd_npu.cpp
void register_run_gpt2(CLI::App& run, CliState& st);      // harness/cmd_gpt2.cpp
void register_campaign(CLI::App& app, CliState& st);      // harness/cmd_campaign.cpp
void register_report(CLI::App& app, CliState& st);        // harness/cmd_report.cpp
void register_plot(CLI::App& app, CliState& st);          // harness/cmd_plot.cpp

}  // namespace flopwatt
