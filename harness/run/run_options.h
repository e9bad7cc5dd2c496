// Options every `run ...` command shares: power, output directory, repetition
// minimums and threads. The CLI fills them (harness/cli/options.cpp); the run
// lifecycle (harness/run/run_setup.h) and the runners read them.
#pragma once
#include <string>
#include <vector>

#include "harness/run/energy.h"

namespace flopwatt {

struct RunCommonOptions {
  PowerOptions power;
  std::string out;              // empty: default_run_dir(<run-id>), under the data directory
  bool overwrite = false;       // replace a run already in `out`
  double min_time_s = 0.2;
  bool min_time_set = false;    // user fixed --min-time: do not lengthen for gauges
  int min_reps = 5;
  int threads = 0;              // 0: all cores
  // The results store (harness/store/store.h) every finished run is recorded in.
  std::string store;            // --store PATH|URL; empty: $FLOPWATT_STORE or the default file
  bool no_store = false;        // --no-store
  bool store_samples = false;   // --store-samples: samples.csv goes into the store too
  std::vector<std::string> tags;  // --tag, repeatable: in run.json's context and the store
  // --pushgateway URL (or $FLOPWATT_PUSHGATEWAY): where end_run pushes the
  // run's results (harness/prom/push.h); empty: no push.
  std::string pushgateway;
  std::string machine_label;    // --label (or $FLOPWATT_MACHINE_LABEL): this machine's name in a fleet
  std::string command_line;     // as typed, passwords masked (run.json's context.command_line)
};

// The filesystem root every /sys, /dev and /proc read goes below: the
// --sysfs-root value when given, else $FLOPWATT_SYSFS_ROOT, else "/".
std::string resolve_sysfs_root(const std::string& flag_value);

}  // namespace flopwatt
