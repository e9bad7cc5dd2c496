// `flopwatt serve`: the Prometheus exporter (harness/serve/serve.h).
#include <memory>

#include "harness/cli/commands.h"
#include "harness/serve/serve.h"

namespace flopwatt {

void register_serve(CLI::App& app, CliState& st) {
  auto* cmd = app.add_subcommand(
      "serve", "Serve /metrics for Prometheus: energy, power and confidence per source, the supply, the headline "
               "source, and the latest stored results");
  auto o = std::make_shared<serve::ServeOptions>();
  o->power.idle_s = 0;
  o->power.sample_period_s = 0.02;
  cmd->add_option("--listen", o->listen,
                  "ADDR:PORT to serve on (default 127.0.0.1:9464, loopback; another address only when given)");
  cmd->add_option("--power", o->power.power, "Power sources: auto, none, or ID[,ID..] (see `flopwatt sources`)");
  cmd->add_option("--sysfs-root", o->power.sysfs_root,
                  "Filesystem root for /sys, /dev and /proc reads (default / or $FLOPWATT_SYSFS_ROOT)");
  cmd->add_option("--power-log", o->power.power_log, "External meter log or pipe with 't_seconds,watts' lines");
  cmd->add_option("--sample-period", o->power.sample_period_s, "Power sampling period in seconds (default 0.02)");
  cmd->add_option("--headline-domain", o->power.headline_domain,
                  "Domain of the headline source (default: the widest available)");
  cmd->add_option("--window", o->window_s, "Seconds each source's power and the headline are judged over (default 5)");
  add_store_options(cmd, o->store, o->no_store);
  cmd->callback([cmd, o, &st] {
    RunCommonOptions common;
    common.power = o->power;
    finalize_run_common_options(cmd, common);
    o->power = common.power;
    st.exit_code = serve::serve(*o, stdout);
  });
}

}  // namespace flopwatt
