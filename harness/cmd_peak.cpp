#include <fmt/core.h>
#include <omp.h>

#include "cpu/peak.h"
#include "harness/commands.h"
#include "harness/console_reporter.h"
#include "harness/run_setup.h"

namespace flopwatt {

std::optional<double> quick_peak(DType dtype) {
  const std::string want(to_string(dtype));
  std::optional<double> best;
  for (const auto& p : cpu::measure_peak(0.1))
    if (p.dtype == want && p.threads == omp_get_max_threads() && p.flop_per_s > best.value_or(0)) best = p.flop_per_s;
  return best;
}

void register_run_peak(CLI::App& run, CliState& st) {
  auto* cmd = run.add_subcommand("peak", "Measure this machine's FMA peak FLOP/s per thread count (fp32, bf16)");
  auto common = std::make_shared<RunCommonOptions>();
  auto seconds = std::make_shared<double>(0.5);
  cmd->add_option("--seconds", *seconds, "Seconds per (dtype, ISA, thread count) point");
  add_run_common_options(cmd, *common);
  cmd->callback([cmd, common, seconds, &st] {
    finalize_run_common_options(cmd, *common);
    common->power.idle_s = cmd->count("--idle") ? common->power.idle_s : 0.0;
    OpenRun r = open_run(*common, {}, {{"command", "run peak"}});
    fmt::print("{:<6} {:<22} {:>7} {:>16}\n", "dtype", "isa", "threads", "peak FLOP/s");
    for (const auto& p : cpu::measure_peak(*seconds)) {
      Measurement m;
      m.workload = "peak";
      m.op = p.isa;
      m.backend = "cpu:peak";
      m.dtype = p.dtype;
      m.reps = 1;
      m.flop_per_s = p.flop_per_s;
      m.skipped = p.flop_per_s > 0 ? std::nullopt : std::optional<std::string>(p.isa + ": " + (p.note.empty() ? "not usable here" : p.note));
      m.threads = p.threads;
      fmt::print("{:<6} {:<22} {:>7} {:>16} {}\n", p.dtype, p.isa, p.threads, si(p.flop_per_s, "FLOP/s"), p.note);
      r.session->add(std::move(m));
    }
    // cpu::measure_peak does not watch g_interrupted: the table is always whole.
    st.exit_code = end_run(r, true, stdout, RunEnding::kReportPath);
  });
}

}  // namespace flopwatt
