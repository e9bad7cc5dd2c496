// `flopwatt run gemm` (GEMM microbenchmarks) and `flopwatt run default` (the
// README's suite: the GEMM suite, then a short GPT-2 run, in one report).
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "harness/backend_registry.h"
#include "harness/commands.h"
#include "harness/console_reporter.h"
#include "harness/gemm_runner.h"
#include "harness/gpt2_runner.h"
#include "harness/progress.h"
#include "harness/run_setup.h"
#include "workloads/error.h"
#include "workloads/limits.h"

namespace flopwatt {

namespace {

struct GemmArgs {
  RunCommonOptions common;
  std::string backends = "available";
  std::string shapes = "gpt2-124m";
  std::string dtype = "fp32";
  bool no_peak = false;
};

std::vector<Backend*> raw(const std::vector<std::unique_ptr<Backend>>& v) {
  std::vector<Backend*> r;
  for (const auto& b : v) r.push_back(b.get());
  return r;
}

// What the GEMM suite runs, settled before the run opens.
struct GemmPlan {
  GemmRunOptions go;
  std::vector<std::unique_ptr<Backend>> backends;
  nlohmann::json context;  // dtype, shapes and peak for run.json's context
};

// Checks the GEMM flags and measures the peak. Call after finalize_run_common_options.
GemmPlan plan_gemm(const GemmArgs& a, bool skip_reference) {
  const auto dt = parse_dtype(a.dtype);
  if (!dt) throw InputError("--dtype " + a.dtype, "unknown dtype", "use fp32 or bf16");
  GemmPlan p;
  p.go.shapes = parse_shapes(a.shapes, "--shapes");
  check_shapes_fit_memory(p.go.shapes, "--shapes");
  p.go.dtype = *dt;
  p.backends = select_backends(a.backends, "--backend");
  if (skip_reference)  // the oracle verifies the others; timing it is not the suite's point
    std::erase_if(p.backends, [](const auto& b) { return b->name() == "cpu:reference"; });
  p.go.timing.min_time_s = a.common.min_time_s;
  p.go.timing.min_reps = a.common.min_reps;
  p.go.lengthen_for_gauges = !a.common.min_time_set;
  p.context = {{"dtype", a.dtype}, {"shapes", a.shapes}};
  if (!a.no_peak) {
    p.go.peak_flop_per_s = quick_peak(*dt);
    p.context["peak_flop_per_s"] =
        p.go.peak_flop_per_s ? nlohmann::json(*p.go.peak_flop_per_s) : nlohmann::json(nullptr);
  }
  return p;
}

std::vector<const Backend*> const_raw(const std::vector<std::unique_ptr<Backend>>& v) {
  std::vector<const Backend*> r;
  for (const auto& b : v) r.push_back(b.get());
  return r;
}

// Runs the suite on the open run, one line per measurement under a progress
// line. Returns false when interrupted.
bool run_suite(const GemmPlan& p, OpenRun& r, std::FILE* out) {
  print_row_header(out);
  const auto headline = r.session->run().headline_source;
  // run_gemm_suite goes shape by shape, every backend per shape: item i is
  // (shapes[i / nb], backends[i % nb]), so the line can name the one running now.
  Progress progress;
  const std::size_t nb = p.backends.size(), total = p.go.shapes.size() * nb;
  auto item = [&](std::size_t i) {
    const GemmShape& s = p.go.shapes[i / nb];
    const GemmDesc& d = s.desc;
    const std::string dims = fmt::format("{}x{}x{}", d.M, d.N, d.K);
    // A custom shape's op is its dimensions already.
    return p.backends[i % nb]->name() + " " + (s.op.rfind(dims, 0) == 0 ? s.op : s.op + " " + dims);
  };
  if (total) progress.update(item(0), 0, total);
  const bool ok = run_gemm_suite(raw(p.backends), p.go, *r.session, *r.meter,
                                 [&](const Measurement& m, std::size_t done, std::size_t n) {
                                   progress.clear();
                                   print_row(out, m, headline);
                                   if (done < n) progress.update(item(done), done, n);
                                 });
  progress.clear();
  return ok;
}

// 1 (with the first failure on stderr) when a GEMM failed verification, else 0.
int verification_status(const Run& run) {
  for (const auto& m : run.measurements)
    if (m.verified && !*m.verified) {
      fmt::print(stderr, "verification failed for {} {} (rel err {:.3g}); see run.json\n", m.backend, m.op,
                 m.verify_rel_err.value_or(-1));
      return 1;
    }
  return 0;
}

int run_gemm(CLI::App* cmd, GemmArgs& a) {
  finalize_run_common_options(cmd, a.common);
  GemmPlan p = plan_gemm(a, false);
  nlohmann::json extra = {{"command", "run gemm"}};
  extra.update(p.context);
  std::FILE* out = stdout;
  OpenRun r = start_run(a.common, const_raw(p.backends), extra, out);
  const bool ok = run_suite(p, r, out);
  if (const int code = end_run(r, ok, out, RunEnding::kSummary)) return code;
  return verification_status(r.session->run());
}

struct DefaultArgs {
  GemmArgs gemm;
  std::string gpt2_model = "d12";
  int gpt2_steps = 3;
};

// The README's suite: the GPT-2 124M GEMM shapes on every available backend,
// then a short GPT-2 training run on the default GEMM backend, in one run.
int run_default(CLI::App* cmd, DefaultArgs& a) {
  finalize_run_common_options(cmd, a.gemm.common);
  a.gemm.backends = "available";
  a.gemm.shapes = "gpt2-124m";
  // The GPT-2 flags are checked before the GEMMs run, so a typo costs nothing.
  if (a.gpt2_steps < 0)
    throw InputError("--gpt2-steps " + std::to_string(a.gpt2_steps), "must be >= 0",
                     "pass a step count, or 0 to skip the GPT-2 run");
  const gpt2::Config cfg = gpt2::preset(a.gpt2_model, "--gpt2-model");
  std::optional<Gpt2Runner> gpt2;
  if (a.gpt2_steps > 0) {
    Gpt2Options o;
    o.model = a.gpt2_model;
    o.batch = 4;
    o.seq = 64;
    o.steps = a.gpt2_steps;
    o.warmup = a.gpt2_steps > 1 ? 1 : 0;  // a single step is all there is to measure
    o.dtype = DType::F32;
    gpt2.emplace(o, cfg);
  }
  GemmPlan p = plan_gemm(a.gemm, true);
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
  bool ok = run_suite(p, r, out);
  if (ok && gpt2) {
    fmt::print(out, "\n");
    ok = gpt2->train(r, a.gemm.common.power.sample_period_s, out);
  }
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
  cmd->add_flag("--no-peak", a->no_peak, "Skip the short peak-FLOP/s measurement (no fraction of peak)");
  add_run_common_options(cmd, a->common);
  cmd->callback([cmd, a, &st] { st.exit_code = run_gemm(cmd, *a); });
}

void register_run_default(CLI::App& run, CliState& st) {
  auto* cmd = run.add_subcommand(
      "default", "The README's suite: GPT-2 124M GEMMs on every available backend, then a short GPT-2 training run");
  auto a = std::make_shared<DefaultArgs>();
  cmd->add_option("--gpt2-model", a->gpt2_model,
                  "Preset of the GPT-2 run (B=4, T=64, fp32, default GEMM backend): tiny | d12 | d24 | d36 | d48 "
                  "(default d12)");
  cmd->add_option("--gpt2-steps", a->gpt2_steps,
                  "Training steps of the GPT-2 run, the first a warm-up (default 3; 0 skips the GPT-2 run)");
  add_run_common_options(cmd, a->gemm.common);
  cmd->callback([cmd, a, &st] { st.exit_code = run_default(cmd, *a); });
}

}  // namespace flopwatt
