// `flopwatt run gpt2`: trains llm.c's GPT-2 for --steps steps (harness/runners/gpt2_runner.h)
// and reports one measurement per step and, over the steps after warm-up, one
// per op (and per layer with --per-layer). Ends with a per-op table.
#include <fmt/core.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "harness/cli/commands.h"
#include "harness/runners/gpt2_runner.h"
#include "harness/run/ceilings_store.h"
#include "harness/run/counters.h"
#include "harness/run/run_setup.h"
#include "harness/output/safe_file.h"
#include "workloads/error.h"
#include "workloads/gpt2/checkpoint.h"
#include "workloads/gpt2/config.h"

namespace flopwatt {

namespace {

struct Gpt2Args {
  RunCommonOptions common;
  Gpt2Options gpt2;
  std::string dtype = "fp32";
  std::string save;
  std::string grad_order = "standard";
  bool no_peak = false;
  std::string counters = "default";
};

int run_gpt2(CLI::App* cmd, Gpt2Args& a) {
  finalize_run_common_options(cmd, a.common);
  a.gpt2.sysfs_root = a.common.power.sysfs_root;
  const auto dt = parse_dtype(a.dtype);
  if (!dt) throw InputError("--dtype " + a.dtype, "unknown dtype", "use fp32 or bf16");
  a.gpt2.dtype = *dt;
  const auto go = gpt2::parse_grad_order(a.grad_order);
  if (!go) throw InputError("--grad-order " + a.grad_order, "unknown order", "use standard, interleaved or auto");
  a.gpt2.grad_order = *go;
  if (cmd->count("--warmup") == 0 && a.gpt2.steps == 1) a.gpt2.warmup = 0;

  gpt2::Config cfg;
  if (!a.gpt2.checkpoint.empty()) {
    cfg = gpt2::read_checkpoint_config(a.gpt2.checkpoint);
    if (cmd->count("--model") && !(gpt2::preset(a.gpt2.model) == cfg))
      throw InputError("--model " + a.gpt2.model, "does not match --checkpoint " + a.gpt2.checkpoint + " (" +
                                                      gpt2::describe(cfg) + ")",
                       "drop --model; the checkpoint defines the model");
  } else {
    cfg = gpt2::preset(a.gpt2.model);
  }
  // Checked before training, so a bad path never throws away a finished run.
  std::optional<OutputDir> save_dir;
  if (!a.save.empty()) save_dir.emplace(OutputDir::parent_of(a.save, "--save"));
  auto save = [&](gpt2::Model& model) {
    save_dir->replace(std::filesystem::path(a.save).filename().string(), [&](const ByteSink& sink) {
      gpt2::write_checkpoint_to(sink, cfg, model.params(), "--save " + a.save);
    });
  };
  // --steps 0 --save F: the initial parameters (--seed's random init, or the
  // --checkpoint's), as a checkpoint another trainer can start from. No run.
  if (a.gpt2.steps == 0 && !a.save.empty()) {
    Gpt2Options o = a.gpt2;
    o.steps = 1;  // what the runner checks (batch, seq, memory, backend, --data) as for a real run
    o.warmup = 0;
    Gpt2Runner init(o, cfg);
    save(init.model());
    fmt::print("saved checkpoint {} (initial parameters, {}; no training: --steps 0)\n", a.save,
               a.gpt2.checkpoint.empty() ? "random init, seed " + std::to_string(a.gpt2.seed)
                                         : "from " + a.gpt2.checkpoint);
    return 0;
  }
  RunCounters counters(a.counters, a.common.power.sysfs_root);
  a.gpt2.counters = &counters;
  Gpt2Runner gpt2(a.gpt2, cfg);
  gpt2.build_model();  // before the run opens: a bad checkpoint is bad input, not a broken run

  std::FILE* out = stdout;
  const nlohmann::json extra = {
      {"command", "run gpt2"}, {"gpt2", gpt2.context()}, {"counters", counters.status_json()}};
  OpenRun r = start_run(a.common, {&gpt2.backend()}, extra, out);
  // After the run opened, so that bad input never leaves a stored peak behind.
  nlohmann::json roofline;
  r.session->set_roofline(
      settle_roofline({&gpt2.backend()}, *dt, a.common.power.sysfs_root, !a.no_peak, "run gpt2",
                      start_trip(r.session->run().context), &roofline));
  r.session->run().context["roofline"] = roofline;
  r.session->save();
  if (const std::string line = counters.summary(); !line.empty()) fmt::print(out, "{}\n", line);
  const bool complete = gpt2.train(r, a.common.power.sample_period_s, out);
  if (!a.save.empty()) {
    save(gpt2.model());
    fmt::print(out, "saved checkpoint {}\n", a.save);
  }
  return end_run(r, complete, out, RunEnding::kReportPath);
}

}  // namespace

void register_run_gpt2(CLI::App& run, CliState& st) {
  auto* cmd = run.add_subcommand("gpt2", "Train llm.c's GPT-2 and measure every op (FLOP/s, FLOP/J)");
  auto a = std::make_shared<Gpt2Args>();
  cmd->add_option("--model", a->gpt2.model, "Preset: tiny | d12 (124M) | d24 | d36 | d48 (default d12)");
  cmd->add_option("--checkpoint", a->gpt2.checkpoint, "llm.c checkpoint (.bin, version 3) to start from (default: random init)");
  cmd->add_option("--data", a->gpt2.data, "llm.c token file (.bin); batches are taken in order and wrap (default: random tokens)");
  cmd->add_option("--batch", a->gpt2.batch, "Batch size B (default 4)");
  cmd->add_option("--seq", a->gpt2.seq, "Sequence length T (default 64)");
  cmd->add_option("--steps", a->gpt2.steps, "Training steps (default 10; 0 only with --save)");
  cmd->add_option("--warmup", a->gpt2.warmup, "Steps left out of the per-op figures (default 1)");
  cmd->add_option("--lr", a->gpt2.adamw.lr, "AdamW learning rate (default 1e-4)");
  cmd->add_option("--beta1", a->gpt2.adamw.beta1, "AdamW beta1 (default 0.9)");
  cmd->add_option("--beta2", a->gpt2.adamw.beta2, "AdamW beta2 (default 0.999)");
  cmd->add_option("--eps", a->gpt2.adamw.eps, "AdamW epsilon (default 1e-8)");
  cmd->add_option("--weight-decay", a->gpt2.adamw.weight_decay, "AdamW weight decay (default 0)");
  cmd->add_option("--dtype", a->dtype, "GEMM operands: fp32 | bf16 (bf16: fp32 master weights and accumulation)");
  cmd->add_option("--gemm-backend", a->gpt2.gemm_backend, "Backend for every GEMM (default: fastest available CPU backend)");
  cmd->add_option("--grad-order", a->grad_order,
                  "Linear backward GEMM order: standard (dX then dW) | interleaved (blocks of dY rows feed both while "
                  "cached) | auto (per layer, fewer modelled DRAM bytes); default standard");
  cmd->add_option("--save", a->save, "Write the trained parameters as an llm.c checkpoint (with --steps 0: the initial ones, no run)");
  cmd->add_option("--seed", a->gpt2.seed, "Seed of the random init and random tokens (default 1337)");
  cmd->add_option("--counters", a->counters,
                  kCountersHelp);
  cmd->add_flag("--no-peak", a->no_peak,
                "Skip this machine's ceilings (stored by `run peak`, else measured short): no intensity roof");
  cmd->add_flag("--per-layer", a->gpt2.per_layer, "Also report every op of every layer");
  add_run_common_options(cmd, a->common);
  cmd->callback([cmd, a, &st] { st.exit_code = run_gpt2(cmd, *a); });
}

}  // namespace flopwatt
