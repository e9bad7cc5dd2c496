#include <fmt/core.h>
#include <omp.h>

#include "cpu/bandwidth.h"
#include "cpu/peak.h"
#include "harness/cli/commands.h"
#include "harness/output/console_writer.h"
#include "harness/run/ceilings_store.h"
#include "harness/run/run_setup.h"
#include "harness/run/statistics.h"
#include "workloads/error.h"

namespace flopwatt {

namespace {

void measure_fma_peaks(OpenRun& r, double seconds) {
  fmt::print("{:<6} {:<22} {:>7} {:>16}\n", "dtype", "isa", "threads", "peak FLOP/s");
  for (const auto& p : cpu::measure_peak(seconds)) {
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
}

// The exp rate: workload "exp", its rate in flop_per_s at one FLOP per
// exp (the op table's count), bounding GELU and the softmaxes beside the peak.
void measure_exp_rates(OpenRun& r, double seconds) {
  for (int t = 1; t <= omp_get_max_threads(); ++t) {
    Measurement m;
    m.workload = "exp";
    m.op = "exp";
    m.backend = "cpu:exp";
    m.dtype = "fp32";
    m.reps = 1;
    m.threads = t;
    m.flop_per_s = measure_exp_rate(t, seconds);
    fmt::print("{:<6} {:<22} {:>7} {:>16} {}\n", "fp32", "exp (the kernels')", t, si(m.flop_per_s, "exp/s"),
               "one FLOP per exp in the op table; the third ceiling of GELU and the softmaxes");
    r.session->add(std::move(m));
  }
}

// Memory ceilings: workload "bandwidth", op "<level>_<stream>" (e.g.
// dram_triad, llc_r1u3), bytes per repetition in the STREAM count, every
// repetition's time kept; verified means the stream's data was checked.
void measure_bandwidths(OpenRun& r, double seconds, const std::string& sysfs_root) {
  fmt::print("\n{:<8} {:<6} {:>7} {:>14} {:>12} {:>21} {}\n", "stream", "level", "threads", "bytes/thread",
             "median", "p10-p90", "set size");
  const auto caches = cpu::cache_topology(sysfs_root);
  for (int t = 1; t <= omp_get_max_threads(); ++t)
    for (const auto& ws : cpu::working_sets(caches, t))
      for (cpu::Stream s : cpu::all_streams()) {
        const cpu::BandwidthPoint p = cpu::measure_stream(s, ws, t, seconds / 4);
        Measurement m;
        m.workload = "bandwidth";
        std::string level = p.level;
        for (auto& c : level) c = char(std::tolower(static_cast<unsigned char>(c)));
        m.op = level + "_" + p.stream;
        m.backend = "cpu:memory";
        m.dtype = "fp32";
        m.threads = p.threads;
        m.reps = p.reps;
        m.rep_times_s = p.rep_seconds;
        m.time_s = summarize(p.rep_seconds);
        m.bytes = p.bytes_per_rep;
        m.verified = p.verified;
        fmt::print("{:<8} {:<6} {:>7} {:>14} {:>12} {:>21} {}\n", p.stream, p.level, p.threads,
                   si(double(p.bytes_per_thread), "B"), si(p.median_bytes_per_s, "B/s"),
                   si(p.p10_bytes_per_s, "") + "-" + si(p.p90_bytes_per_s, "B/s"),
                   ws.basis + (p.verified ? "" : "  FAILED: " + p.note));
        r.session->add(std::move(m));
      }
}

// Kept where `run gemm` and `run gpt2` look for this machine's ceilings.
void store_ceilings(OpenRun& r, const std::string& sysfs_root) {
  std::string why, note;
  if (const std::string file = store_peak_run(r.session->run(), sysfs_root, &why, &note); !file.empty()) {
    fmt::print("\nceilings stored in {} (run gemm and run gpt2 reuse them for {:.0f} days)\n", file,
               kPeakMaxAgeS / 86400);
    if (!note.empty()) fmt::print("{}\n", note);
  } else
    fmt::print(stderr, "warning: ceilings not stored: {}\n", why);
}

}  // namespace

void register_run_peak(CLI::App& run, CliState& st) {
  auto* cmd = run.add_subcommand("peak", "Measure this machine's ceilings per thread count: FMA peak FLOP/s (fp32, bf16), exp rate, memory streams");
  auto common = std::make_shared<RunCommonOptions>();
  auto seconds = std::make_shared<double>(0.5);
  cmd->add_option("--seconds", *seconds, "Seconds per (dtype, ISA, thread count) point");
  add_run_common_options(cmd, *common);
  cmd->callback([cmd, common, seconds, &st] {
    finalize_run_common_options(cmd, *common);
    if (!(*seconds > 0 && *seconds <= 3600))
      throw InputError("--seconds " + fmt::format("{}", *seconds), "must be above 0 and at most 3600",
                       "pass for example --seconds 0.5");
    common->power.idle_s = cmd->count("--idle") ? common->power.idle_s : 0.0;
    OpenRun r = open_run(*common, {}, {{"command", "run peak"}});
    measure_fma_peaks(r, *seconds);
    measure_exp_rates(r, *seconds);
    measure_bandwidths(r, *seconds, common->power.sysfs_root);
    // cpu::measure_peak does not watch g_interrupted: the table is always whole.
    store_ceilings(r, common->power.sysfs_root);
    st.exit_code = end_run(r, true, stdout, RunEnding::kReportPath);
  });
}

}  // namespace flopwatt
