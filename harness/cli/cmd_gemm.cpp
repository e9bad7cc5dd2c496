// `flopwatt run gemm`: GEMM microbenchmarks on the chosen backends.
#include "harness/cli/commands.h"
#include "harness/cli/gemm_suite.h"
#include "harness/run/counters.h"

namespace flopwatt {

namespace {

int run_gemm(CLI::App* cmd, GemmArgs& a) {
  finalize_run_common_options(cmd, a.common);
  GemmPlan p = plan_gemm(a, false);
  nlohmann::json extra = {{"command", "run gemm"}};
  extra.update(p.context);
  std::FILE* out = stdout;
  OpenRun r = start_run(a.common, const_raw(p.backends), extra, out);
  settle_gemm_ceilings(p, a, r);
  const bool ok = run_suite(p, r, out);
  if (const int code = end_run(r, ok, out, RunEnding::kSummary)) return code;
  return verification_status(r.session->run());
}

}  // namespace

void register_run_gemm(CLI::App& run, CliState& st) {
  auto* cmd = run.add_subcommand("gemm", "GEMM microbenchmarks on CPU and NPU backends");
  auto a = std::make_shared<GemmArgs>();
  cmd->add_option("--backend", a->backends, "Backends: B[,B..], 'available' or 'all' (see `flopwatt backends`)");
  cmd->add_option("--shapes", a->shapes, "gpt2-124m | square | M,N,K[,NN|NT|TN|TT][;M,N,K..]");
  cmd->add_option("--dtype", a->dtype, "fp32 | bf16 (bf16 inputs, fp32 accumulation and output)");
  cmd->add_flag("--no-peak", a->no_peak, "Skip this machine's ceilings (stored by `run peak`, else measured short): no fraction of peak or roof");
  cmd->add_option("--counters", a->counters,
                  kCountersHelp);
  add_run_common_options(cmd, a->common);
  cmd->callback([cmd, a, &st] { st.exit_code = run_gemm(cmd, *a); });
}

}  // namespace flopwatt
