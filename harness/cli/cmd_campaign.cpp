// `flopwatt campaign mains-vs-battery`: options and checks; the campaign
// itself runs in harness/analysis/campaign_runner.cpp.
#include <fmt/core.h>

#include <cmath>
#include <memory>

#include "harness/analysis/campaign_runner.h"
#include "harness/cli/commands.h"
#include "harness/output/text.h"
#include "harness/run/session.h"
#include "workloads/error.h"

namespace flopwatt {

namespace {

void validate(const CampaignOptions& a) {
  auto nonneg = [](double v, const char* flag) {
    if (!(v >= 0) || !std::isfinite(v))
      throw InputError(std::string(flag) + " " + shortest(v), "must be a number >= 0", "pass for example " + std::string(flag) + " 60");
  };
  nonneg(a.wait_timeout_s, "--wait-timeout");
  nonneg(a.cooldown_margin_c, "--cooldown-margin");
  nonneg(a.cooldown_timeout_s, "--cooldown-timeout");
  nonneg(a.pause_s, "--pause");
  if (!(a.min_battery >= 0 && a.min_battery <= 100))
    throw InputError("--min-battery " + shortest(a.min_battery), "must be a percentage 0..100", "pass for example --min-battery 30");
  if (!(a.poll_s >= 0.01 && a.poll_s <= 60))
    throw InputError("--poll " + shortest(a.poll_s), "must be between 0.01 and 60 seconds", "pass for example --poll 1");
}

int run_campaign(CLI::App* cmd, CLI::App* root_app, CampaignOptions& a) {
  finalize_run_common_options(cmd, a.common);
  validate(a);
  install_interrupt_handler();
  try {
    root_app->get_subcommand("run")->get_subcommand("gpt2");
  } catch (const CLI::OptionNotFound&) {
    a.have_gpt2 = false;
  }
  return run_mains_vs_battery(a);
}

}  // namespace

void register_campaign(CLI::App& app, CliState& st) {
  auto* camp = app.add_subcommand("campaign", "Measurement campaigns over machine states");
  camp->require_subcommand(1);
  auto* cmd = camp->add_subcommand(
      "mains-vs-battery",
      "Run a suite on mains and on battery (asking to plug or unplug in between) and compare the two");
  auto a = std::make_shared<CampaignOptions>();
  cmd->add_option("--suite", a->suite, "gemm-smoke | gemm-gpt2 | gpt2-step | paper (default gemm-smoke)");
  cmd->add_flag("--non-interactive", a->non_interactive,
                "Do not ask: poll the power supply until it changes or --wait-timeout passes");
  cmd->add_option("--wait-timeout", a->wait_timeout_s, "Seconds to wait for the plug/unplug (default 600)");
  cmd->add_option("--min-battery", a->min_battery, "Refuse a battery phase below this charge, percent (default 30)");
  cmd->add_option("--cooldown-margin", a->cooldown_margin_c,
                  "Cool-down: every sensor back within this many C of phase 1's start (default 2)");
  cmd->add_option("--cooldown-timeout", a->cooldown_timeout_s, "Give up waiting for the cool-down after S seconds (default 600)");
  cmd->add_option("--pause", a->pause_s, "Fixed pause between phases when no temperature sensor exists (default 60)");
  cmd->add_option("--shapes", a->shapes, "gemm suites: replace the suite's shapes (as `run gemm --shapes`)");
  cmd->add_option("--backend", a->backends, "gemm suites: replace 'every available backend' (as `run gemm --backend`)");
  cmd->add_option("--baseline", a->baseline, "Backend the speedups are relative to (default cpu:llmc, the study's)");
  cmd->add_option("--model", a->gpt2_model, "gpt2 suites: replace the model preset (default d12)");
  cmd->add_option("--steps", a->gpt2_steps, "gpt2 suites: replace the step count");
  cmd->add_option("--poll", a->poll_s, "Seconds between power-supply checks (default 1)");
  add_run_common_options(cmd, a->common);
  cmd->callback([cmd, a, &app, &st] { st.exit_code = run_campaign(cmd, &app, *a); });
}

}  // namespace flopwatt
