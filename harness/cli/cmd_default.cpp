// `flopwatt run default`: the README's suite, the GEMM suite and then a short
// GPT-2 run, in one report.
#include <fmt/core.h>

#include <algorithm>
#include <optional>

#include "harness/cli/commands.h"
#include "harness/cli/gemm_suite.h"
#include "harness/runners/gpt2_runner.h"
#include "workloads/error.h"

namespace flopwatt {

namespace {

struct DefaultArgs {
  GemmArgs gemm;
  std::string gpt2_model = "d12";
  int gpt2_steps = 3;
};

// The README's suite: the GPT-2 124M GEMM shapes on every available backend,
// then a short GPT-2 training run on the default GEMM backend, in one run.
int run_default(CLI::App* cmd, DefaultArgs& a) {
  finalize_run_common_options(cmd, a.gemm.common);
  if (cmd->count("--backend") == 0) a.gemm.backends = "available";
  // The GPT-2 flags are checked before the GEMMs run, so a typo costs nothing.
  if (a.gpt2_steps < 0)
    throw InputError("--gpt2-steps " + std::to_string(a.gpt2_steps), "must be >= 0",
                     "pass a step count, or 0 to skip the GPT-2 run");
  const gpt2::Config cfg = gpt2::preset(a.gpt2_model, "--gpt2-model");
  // Planned before the GPT-2 runner so its ops are counted with the GEMMs' counters.
  GemmPlan p = plan_gemm(a.gemm, true);
  std::optional<Gpt2Runner> gpt2;
  if (a.gpt2_steps > 0) {
    Gpt2Options o;
    o.model = a.gpt2_model;
    o.batch = 4;
    o.seq = 64;
    o.steps = a.gpt2_steps;
    o.warmup = a.gpt2_steps > 1 ? 1 : 0;  // a single step is all there is to measure
    o.dtype = DType::F32;
    o.counters = p.counters.get();
    o.sysfs_root = a.gemm.common.power.sysfs_root;
    gpt2.emplace(o, cfg);
  }
  nlohmann::json extra = {{"command", "run default"}};
  extra.update(p.context);
  std::vector<const Backend*> backends = const_raw(p.backends);
  if (gpt2) {
    extra["gpt2"] = gpt2->context();
    const bool listed = std::any_of(backends.begin(), backends.end(),
                                    [&](const Backend* b) { return b->name() == gpt2->backend().name(); });
    if (!listed) backends.push_back(&gpt2->backend());
  }
  std::FILE* out = stdout;
  OpenRun r = start_run(a.gemm.common, backends, extra, out);
  settle_gemm_ceilings(p, a.gemm, r);
  bool ok = run_suite(p, r, out);
  if (ok && gpt2) {
    fmt::print(out, "\n");
    ok = gpt2->train(r, a.gemm.common.power.sample_period_s, out);
  }
  if (const int code = end_run(r, ok, out, RunEnding::kSummary)) return code;
  return verification_status(r.session->run());
}

}  // namespace

void register_run_default(CLI::App& run, CliState& st) {
  auto* cmd = run.add_subcommand(
      "default", "The README's suite: GPT-2 124M GEMMs on every available backend, then a short GPT-2 training run");
  auto a = std::make_shared<DefaultArgs>();
  cmd->add_option("--gpt2-model", a->gpt2_model,
                  "Preset of the GPT-2 run (B=4, T=64, fp32, default GEMM backend): tiny | d12 | d24 | d36 | d48 "
                  "(default d12)");
  cmd->add_option("--gpt2-steps", a->gpt2_steps,
                  "Training steps of the GPT-2 run, the first a warm-up (default 3; 0 skips the GPT-2 run)");
  cmd->add_option("--backend", a->gemm.backends,
                  "GEMM backends: B[,B..], 'available' or 'all' (default available; the GPT-2 run uses the "
                  "default GEMM backend)");
  cmd->add_option("--shapes", a->gemm.shapes,
                  "GEMM shapes: gpt2-124m | square | M,N,K[,NN|NT|TN|TT][;M,N,K..] (default gpt2-124m, GPT-2 124M's "
                  "GEMMs at B=4, T=64)");
  cmd->add_option("--counters", a->gemm.counters, kCountersHelp);
  add_run_common_options(cmd, a->gemm.common);
  cmd->callback([cmd, a, &st] { st.exit_code = run_default(cmd, *a); });
}

}  // namespace flopwatt
