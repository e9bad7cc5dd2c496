// `flopwatt capture --out DIR`: this machine's power interfaces recorded as a
// fixture (power/capture.h) that `--sysfs-root DIR` plays back as a moving
// machine (power/replay.h), so a laptop's behaviour can be contributed and
// tested without the laptop.
#include <fmt/core.h>

#include <memory>

#include "harness/cli/commands.h"
#include "harness/run/run_options.h"
#include "power/capture.h"

namespace flopwatt {

void register_capture(CLI::App& app, CliState& st) {
  auto* cmd = app.add_subcommand(
      "capture", "Record this machine's power interfaces and a timeline of their values under load as a fixture");
  auto o = std::make_shared<power::CaptureOptions>();
  auto root = std::make_shared<std::string>();
  auto no_load = std::make_shared<bool>(false);
  cmd->add_option("--out", o->out, "New directory for the capture (replay it with --sysfs-root DIR)")->required();
  cmd->add_option("--seconds", o->seconds, "Sampling time in seconds; the second half under load (default 10)");
  cmd->add_option("--period", o->period_s, "Seconds between samples (default 0.1)");
  cmd->add_option("--sysfs-root", *root,
                  "Filesystem root to record (default / or $FLOPWATT_SYSFS_ROOT)")
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--no-load", *no_load, "Sample without generating a CPU load");
  cmd->callback([o, root, no_load, &st] {
    o->root = resolve_sysfs_root(*root);
    o->load = !*no_load;
    fmt::print(stderr, "flopwatt capture: sampling for {:g} s{}\n", o->seconds,
               o->load ? ", the second half with every CPU busy" : "");
    const power::CaptureSummary s = power::capture_machine(*o);
    fmt::print("{} files, {} sampled into {} timeline rows, {} left out (capture.json says why): {}\n", s.files.size(),
               s.moving.size(), s.rows, s.skipped.size(), o->out);
    if (s.moving.empty())
      fmt::print(stderr, "flopwatt capture: nothing to sample: no powercap, power_supply or hwmon files were found\n");
    st.exit_code = 0;
  });
}

}  // namespace flopwatt
