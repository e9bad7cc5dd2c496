#include <fmt/core.h>
#include <unistd.h>

#include "harness/backend_registry.h"
#include "harness/commands.h"
#include "harness/console_reporter.h"
#include "harness/gemm_runner.h"
#include "harness/progress.h"
#include "harness/run_setup.h"
#include "workloads/error.h"

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

int run_gemm(CLI::App* cmd, GemmArgs& a, bool skip_reference) {
  finalize_run_common_options(cmd, a.common);
  const auto dt = parse_dtype(a.dtype);
  if (!dt) throw InputError("--dtype " + a.dtype, "unknown dtype", "use fp32 or bf16");
  GemmRunOptions go;
  go.shapes = parse_shapes(a.shapes, "--shapes");
  go.dtype = *dt;
  auto owned = select_backends(a.backends, "--backend");
  if (skip_reference)  // the oracle verifies the others; timing it is not the suite's point
    std::erase_if(owned, [](const auto& b) { return b->name() == "cpu:reference"; });
  go.timing.min_time_s = a.common.min_time_s;
  go.timing.min_reps = a.common.min_reps;
  go.lengthen_for_gauges = !a.common.min_time_set;
  std::vector<const Backend*> cb;
  for (const auto& b : owned) cb.push_back(b.get());
  nlohmann::json extra = {{"command", "run gemm"}, {"dtype", a.dtype}, {"shapes", a.shapes}};
  if (!a.no_peak) {
    go.peak_flop_per_s = quick_peak(*dt);
    extra["peak_flop_per_s"] = go.peak_flop_per_s ? nlohmann::json(*go.peak_flop_per_s) : nlohmann::json(nullptr);
  }
  std::FILE* out = stdout;
  OpenRun r = start_run(a.common, cb, extra, out);
  print_row_header(out);
  const auto headline = r.session->run().headline_source;
  // run_gemm_suite goes shape by shape, every backend per shape: item i is
  // (shapes[i / nb], backends[i % nb]), so the line can name the one running now.
  Progress progress;
  const std::size_t nb = owned.size(), total = go.shapes.size() * nb;
  auto item = [&](std::size_t i) {
    const GemmShape& s = go.shapes[i / nb];
    const GemmDesc& d = s.desc;
    const std::string dims = fmt::format("{}x{}x{}", d.M, d.N, d.K);
    // A custom shape's op is its dimensions already.
    return owned[i % nb]->name() + " " + (s.op.rfind(dims, 0) == 0 ? s.op : s.op + " " + dims);
  };
  if (total) progress.update(item(0), 0, total);
  const bool ok = run_gemm_suite(raw(owned), go, *r.session, *r.meter,
                                 [&](const Measurement& m, std::size_t done, std::size_t n) {
                                   progress.clear();
                                   print_row(out, m, headline);
                                   if (done < n) progress.update(item(done), done, n);
                                 });
  progress.clear();
  if (const int code = end_run(r, ok, out, RunEnding::kSummary)) return code;
  for (const auto& m : r.session->run().measurements)
    if (m.verified && !*m.verified) {
      fmt::print(stderr, "verification failed for {} {} (rel err {:.3g}); see run.json\n", m.backend, m.op,
                 m.verify_rel_err.value_or(-1));
      return 1;
    }
  return 0;
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
  cmd->callback([cmd, a, &st] { st.exit_code = run_gemm(cmd, *a, false); });
}

void register_run_default(CLI::App& run, CliState& st) {
  auto* cmd = run.add_subcommand("default", "The README's suite: GPT-2 124M GEMMs on every available backend");
  auto a = std::make_shared<GemmArgs>();
  add_run_common_options(cmd, a->common);
  cmd->callback([cmd, a, &st] {
    a->backends = "available";
    a->shapes = "gpt2-124m";
    st.exit_code = run_gemm(cmd, *a, true);
  });
}

}  // namespace flopwatt
