#include "harness/cli/commands.h"

#include <omp.h>

#include <cstdlib>

#include "harness/prom/push.h"
#include "harness/run/session.h"
#include "harness/store/store.h"
#include "power/config_error.h"
#include "power/external_log.h"
#include "power/replay.h"
#include "workloads/error.h"
#include "workloads/limits.h"

namespace flopwatt {

namespace {

std::string g_command_line;

}  // namespace

namespace {

// An argument without the password a connection string in it may carry, as
// the argument itself or an --option=VALUE, whatever form libpq took it in.
std::string masked_arg(const std::string& raw) {
  const auto eq = raw.find('=');
  if (raw.rfind("--", 0) == 0 && eq != std::string::npos) return raw.substr(0, eq + 1) + store::masked(raw.substr(eq + 1));
  return store::masked(raw);
}

}  // namespace

std::vector<std::string> hide_passwords_from_ps(int argc, char** argv) {
  std::vector<std::string> kept(argv, argv + argc);
  for (int i = 1; i < argc; ++i) {
    const std::string m = masked_arg(kept[i]);
    if (m == kept[i]) continue;
    // The argument's own bytes are what /proc/PID/cmdline and ps show: the
    // masked text, cut to their length (it never holds the password), then spaces.
    const std::size_t n = kept[i].size();
    for (std::size_t k = 0; k < n; ++k) argv[i][k] = k < m.size() ? m[k] : ' ';
  }
  return kept;
}

void set_command_line(int argc, char** argv) {
  std::string line = "flopwatt";
  for (int i = 1; i < argc; ++i) {
    // A password never reaches run.json.
    const std::string arg = store::clean_text(masked_arg(argv[i]));
    const bool plain = !arg.empty() && arg.find_first_of(" \t'\"\\$;&|<>()*?") == std::string::npos;
    line += ' ';
    if (plain) {
      line += arg;
    } else {
      line += '\'';
      for (char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
      line += '\'';
    }
  }
  g_command_line = line;
}

void add_run_common_options(CLI::App* cmd, RunCommonOptions& o) {
  cmd->add_option("--power", o.power.power, "Power sources: auto, none, or ID[,ID..] (see `flopwatt sources`)");
  cmd->add_option("--sysfs-root", o.power.sysfs_root,
                  "Filesystem root for /sys, /dev and /proc reads (default / or $FLOPWATT_SYSFS_ROOT)")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--power-log", o.power.power_log, "External meter log or pipe with 't_seconds,watts' lines");
  cmd->add_option("--idle", o.power.idle_s, "Seconds of idle-power baseline before measuring (0 skips)");
  cmd->add_option("--sample-period", o.power.sample_period_s, "Power sampling period in seconds");
  cmd->add_option("--headline-domain", o.power.headline_domain,
                  "Domain of the headline FLOP/J (default: the widest available)");
  cmd->add_option("--out", o.out, "Output directory (default $XDG_DATA_HOME/flopwatt/runs/<run-id>, else ~/.local/share/flopwatt/runs/<run-id>)");
  cmd->add_flag("--overwrite", o.overwrite, "Replace a run already in the --out directory (refused otherwise)");
  cmd->add_option("--min-time", o.min_time_s, "Minimum timed seconds per measurement");
  cmd->add_option("--min-reps", o.min_reps, "Minimum repetitions per measurement");
  cmd->add_option("--threads", o.threads, "OpenMP threads (default: all cores)");
  add_store_options(cmd, o.store, o.no_store);
  add_push_option(cmd, o.pushgateway);
  cmd->add_flag("--store-samples", o.store_samples, "Record samples.csv in the results store too");
  cmd->add_option("--tag", o.tags, "Tag the run in the results store (repeatable)");
  cmd->add_option("--label", o.machine_label, "This machine's name in the results store (default $FLOPWATT_MACHINE_LABEL)");
}

void finalize_run_common_options(CLI::App* cmd, RunCommonOptions& o) {
  // From the start of the command, not the opening of the run: a Ctrl-C during
  // the peak measurement or the model's set-up must still end with a report.
  install_interrupt_handler();
  // `measure` has no --min-time: it times the whole program.
  const CLI::Option* min_time = cmd->get_option_no_throw("--min-time");
  o.min_time_set = min_time && min_time->count() > 0;
  if (o.min_time_s < 0 || !std::isfinite(o.min_time_s))
    throw InputError("--min-time", "must be >= 0 seconds", "pass for example --min-time 0.5");
  if (o.min_reps < 1) throw InputError("--min-reps", "must be >= 1", "pass for example --min-reps 5");
  if (o.power.idle_s < 0 || !std::isfinite(o.power.idle_s))
    throw InputError("--idle", "must be >= 0 seconds", "pass for example --idle 3, or --idle 0 to skip");
  if (!(o.power.sample_period_s >= 0.001 && o.power.sample_period_s <= 10))
    throw InputError("--sample-period", "must be between 0.001 and 10 seconds", "pass for example --sample-period 0.01");
  check_thread_count(o.threads, "--threads");
  if (o.threads > 0) omp_set_num_threads(o.threads);
  if (!o.power.power_log.empty()) {
    try {
      power::check_power_log(o.power.power_log);
    } catch (const power::ConfigError& e) {
      // The power layer's errors already name the flag ("--power-log PATH"), or only a line of the file.
      const bool named = e.where().rfind("--power-log", 0) == 0;
      throw InputError(named ? e.where() : "--power-log " + e.where(), e.problem(), e.fix());
    }
  }
  o.power.sysfs_root = resolve_sysfs_root(o.power.sysfs_root);
  // A `flopwatt capture` directory moves as the recorded machine did.
  o.power.sysfs_root = power::replay_if_capture(o.power.sysfs_root, stderr);
  if (o.machine_label.empty())
    if (const char* l = std::getenv("FLOPWATT_MACHINE_LABEL")) o.machine_label = l;
  o.command_line = g_command_line;
  o.pushgateway = prom::resolve_pushgateway(o.pushgateway);
}

void add_push_option(CLI::App* cmd, std::string& url) {
  cmd->add_option("--pushgateway", url,
                  "Push the run's results to this Prometheus Pushgateway, e.g. http://127.0.0.1:9091 (default "
                  "$FLOPWATT_PUSHGATEWAY); a failed push is a warning");
}

void add_store_option(CLI::App* cmd, std::string& store) {
  cmd->add_option("--store", store,
                  "Results store: a SQLite file or a postgresql:// URI / libpq connection string (default "
                  "$FLOPWATT_STORE, else $XDG_DATA_HOME/flopwatt/results.sqlite3)");
}

void add_store_options(CLI::App* cmd, std::string& store, bool& no_store) {
  add_store_option(cmd, store);
  cmd->add_flag("--no-store", no_store, "Do not record the run in the results store");
}

}  // namespace flopwatt
