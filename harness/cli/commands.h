// Each CLI command registers itself on the CLI11 app; main() wires them up.
// A command's callback sets exit_code; errors are thrown (InputError -> exit 2).
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "harness/run/run_options.h"

namespace flopwatt {

struct CliState {
  int exit_code = 0;
};

void add_run_common_options(CLI::App* cmd, RunCommonOptions& o);
// Applies FLOPWATT_SYSFS_ROOT, validates values; throws InputError naming the flag.
void finalize_run_common_options(CLI::App* cmd, RunCommonOptions& o);
// Keeps the command line for run.json (context.command_line), passwords masked; main() calls it first.
void set_command_line(int argc, char** argv);
// Copies of the arguments for the parser, then the password of any connection
// string among them overwritten in the process's own argv, which other users
// read in /proc/PID/cmdline (ps) for as long as the command runs.
std::vector<std::string> hide_passwords_from_ps(int argc, char** argv);
// --store and --no-store, for the commands that record a run.
void add_store_options(CLI::App* cmd, std::string& store, bool& no_store);
// --store alone, for the commands that only read the store (no run of theirs to record).
void add_store_option(CLI::App* cmd, std::string& store);
// --pushgateway URL, for every command that ends a run (end_run pushes it).
void add_push_option(CLI::App* cmd, std::string& url);

void register_run_gemm(CLI::App& run, CliState& st);      // harness/cli/cmd_gemm.cpp
void register_run_default(CLI::App& run, CliState& st);   // harness/cli/cmd_default.cpp
void register_run_peak(CLI::App& run, CliState& st);      // harness/cli/cmd_peak.cpp
void register_backends(CLI::App& app, CliState& st);      // harness/cli/cmd_backends.cpp
void register_sources(CLI::App& app, CliState& st);       // harness/cli/cmd_sources.cpp
void register_npu(CLI::App& app, CliState& st);           // harness/cli/cmd_npu.cpp
void register_npu_selftest(CLI::App& npu, CliState& st);  // harness/cli/cmd_npu_selftest.cpp, under `npu`
void register_run_gpt2(CLI::App& run, CliState& st);      // harness/cli/cmd_gpt2.cpp
void register_campaign(CLI::App& app, CliState& st);      // harness/cli/cmd_campaign.cpp
void register_report(CLI::App& app, CliState& st);        // harness/cli/cmd_report.cpp
void register_plot(CLI::App& app, CliState& st);          // harness/cli/cmd_plot.cpp
void register_store(CLI::App& app, CliState& st);         // harness/cli/cmd_store.cpp
void register_history(CLI::App& app, CliState& st);       // harness/cli/cmd_history.cpp
void register_compare(CLI::App& app, CliState& st);       // harness/cli/cmd_compare.cpp
void register_measure(CLI::App& app, CliState& st);       // harness/cli/cmd_measure.cpp
void register_capture(CLI::App& app, CliState& st);       // harness/cli/cmd_capture.cpp
void register_serve(CLI::App& app, CliState& st);         // harness/cli/cmd_serve.cpp
void register_site(CLI::App& app, CliState& st);          // harness/cli/cmd_site.cpp

}  // namespace flopwatt
