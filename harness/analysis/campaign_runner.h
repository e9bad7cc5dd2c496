// The mains-vs-battery campaign as it runs: each phase runs the suite as
// child processes of this binary (`run gemm` / `run gpt2` with --out
// <campaign>/<state>[/<part>]), so every phase is an ordinary run dir;
// meanwhile this process polls the power supply, so a plug or unplug in the
// middle of a phase marks the phase invalid. The pieces that run nothing
// (suites, supply snapshots, the comparison) are in harness/analysis/campaign.h.
#pragma once
#include <string>

#include "harness/run/run_options.h"

namespace flopwatt {

struct CampaignOptions {
  RunCommonOptions common;
  std::string suite = "gemm-smoke";
  bool non_interactive = false;
  double wait_timeout_s = 600;
  double min_battery = 30;
  double cooldown_margin_c = 2.0;
  double cooldown_timeout_s = 600;
  double pause_s = 60;
  double poll_s = 1.0;
  std::string shapes, backends, gpt2_model, baseline;
  int gpt2_steps = 0;
  bool have_gpt2 = true;  // `run gpt2` exists in this build
};

// Runs both phases and writes campaign.json, comparison.json and
// comparison.csv into o.common.out (a new directory); returns the exit
// status: 0 both phases valid, 1 a phase invalid or the switch timed out,
// 130 interrupted. Throws InputError for a machine or directory it cannot
// run on (no battery, an existing campaign, a low battery).
int run_mains_vs_battery(const CampaignOptions& o);

}  // namespace flopwatt
