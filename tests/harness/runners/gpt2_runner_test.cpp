#include "harness/runners/gpt2_runner.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include "harness/run/ceilings_store.h"
#include "harness/run/counters.h"
#include "harness/run/run_setup.h"
#include "tests/harness/runners/clock_perf.h"
#include "workloads/gpt2/config.h"

namespace flopwatt {
namespace {

namespace fs = std::filesystem;

// A GPT-2 run on a machine whose memory controllers are counted (the Tiger
// Lake fixture's free-running IMC through a clock-driven fake perf): every
// per-op row carries the counts of its calls after warm-up, and its intensity
// is over the counted DRAM bytes per step.
TEST(Gpt2Runner, PerOpRowsCarryCountsAndCountedIntensity) {
  const fs::path dir = fs::temp_directory_path() / ("flopwatt_gpt2_runner_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RunCounters counters("dram_read_bytes,dram_write_bytes", std::string(FLOPWATT_TEST_FIXTURES) + "/pmu/tigerlake-laptop",
                       "--counters", std::make_unique<ClockPerf>());
  ASSERT_TRUE(counters.active()) << counters.summary();
  Gpt2Options o;
  o.model = "tiny";
  o.batch = 2;
  o.seq = 8;
  o.steps = 3;
  o.warmup = 1;
  o.gemm_backend = "cpu:reference";
  o.counters = &counters;
  Gpt2Runner runner(o, gpt2::preset("tiny", "--model"));
  RunCommonOptions common;
  common.power.power = "none";
  common.power.idle_s = 0;
  common.out = (dir / "out").string();
  std::FILE* sink = std::fopen("/dev/null", "w");
  OpenRun run = open_run(common, {&runner.backend()}, {{"command", "test"}});
  ASSERT_TRUE(runner.train(run, 0.01, sink));
  close_run(run, true);
  std::fclose(sink);
  int op_rows = 0;
  for (const auto& m : run.session->run().measurements) {
    if (m.workload != "gpt2" || m.op == "step" || m.skipped) continue;
    SCOPED_TRACE(m.op);
    ++op_rows;
    EXPECT_EQ(m.reps, 2);  // the steps after warm-up
    ASSERT_TRUE(m.counters.at(cpu::kDramReadBytes)) << "counted over the op's calls";
    ASSERT_TRUE(m.dram_bytes_measured);
    EXPECT_EQ(m.intensity_basis, "measured");
    // 2 lines of 64 B per ns (reads and writes) over at least the op's own time.
    EXPECT_GE(*m.dram_bytes_measured * m.reps, 0.999 * 128 * m.time_s.total * 1e9);
    if (m.flop > 0) {
      EXPECT_DOUBLE_EQ(*m.intensity, m.flop / *m.dram_bytes_measured);
    }
  }
  EXPECT_GT(op_rows, 10);
  fs::remove_all(dir);
}

Gpt2Options tiny_options() {
  Gpt2Options o;
  o.model = "tiny";
  o.batch = 2;
  o.seq = 8;
  o.steps = 3;
  o.warmup = 1;
  o.gemm_backend = "cpu:llmc";
  return o;
}

// Trains the tiny model against `roofs`; the run's measurements.
std::vector<Measurement> train_against(const RooflineSet& roofs, const fs::path& dir) {
  const Gpt2Options o = tiny_options();
  Gpt2Runner runner(o, gpt2::preset("tiny", "--model"));
  RunCommonOptions common;
  common.power.power = "none";
  common.power.idle_s = 0;
  common.out = (dir / "out").string();
  std::FILE* sink = std::fopen("/dev/null", "w");
  OpenRun run = open_run(common, {&runner.backend()}, {{"command", "test"}});
  run.session->set_roofline(roofs);
  EXPECT_TRUE(runner.train(run, 0.01, sink));
  close_run(run, true);
  std::fclose(sink);
  return run.session->run().measurements;
}

// Each step row carries the cores' round trip probed right after it, and the
// step's console line says the same figure. With one thread there is no
// second core to probe: null, and nothing on the line. With two a loaded
// machine can leave a probe unfinished (null), but not every one of them
// while the run's own start probe finished.
TEST(Gpt2Runner, EachStepRowCarriesTheCoresRoundTripAfterIt) {
  const fs::path dir = fs::temp_directory_path() / ("flopwatt_gpt2_trip_" + std::to_string(::getpid()));
  const int threads = omp_get_max_threads();
  for (int t : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << t << " threads");
    fs::remove_all(dir);
    omp_set_num_threads(t);
    Gpt2Options o = tiny_options();
    o.steps = 4;
    Gpt2Runner runner(o, gpt2::preset("tiny", "--model"));
    RunCommonOptions common;
    common.power.power = "none";
    common.power.idle_s = 0;
    common.out = (dir / "out").string();
    char* text = nullptr;
    std::size_t size = 0;
    std::FILE* console = open_memstream(&text, &size);
    OpenRun run = open_run(common, {&runner.backend()}, {{"command", "test"}});
    ASSERT_TRUE(runner.train(run, 0.01, console));
    close_run(run, true);
    std::fclose(console);
    const std::string out(text, size);
    std::free(text);
    int steps = 0, probed = 0;
    for (const auto& m : run.session->run().measurements) {
      if (m.op != "step" || !m.step) continue;
      ++steps;
      const std::string line_start = fmt::format("step {:>4}/{}", *m.step + 1, o.steps);
      const auto at = out.find(line_start);
      ASSERT_NE(at, std::string::npos) << out;
      const std::string line = out.substr(at, out.find('\n', at) - at);
      if (t == 1) {
        EXPECT_FALSE(m.core_round_trip_ns) << line;
      }
      if (!m.core_round_trip_ns) {
        EXPECT_EQ(line.find("cores"), std::string::npos) << line;
        continue;
      }
      ++probed;
      EXPECT_GT(*m.core_round_trip_ns, 0);
      EXPECT_NE(line.find(fmt::format("cores {:.0f} ns apart", *m.core_round_trip_ns)), std::string::npos) << line;
    }
    EXPECT_EQ(steps, o.steps);
    if (t == 2 && run.session->run().context.value("core_round_trip_ns", nlohmann::json()).is_number()) {
      EXPECT_GT(probed, 0) << "the start's probe finished, every step's did not";
    }
  }
  omp_set_num_threads(threads);
  fs::remove_all(dir);
}

// The step's figure against its roofline: its ops' times at their roofs,
// summed, over the measured step. Ceilings made up so each op's roof is known.
TEST(Gpt2Runner, StepFractionIsItsOpsRoofTimesOverTheStep) {
  const fs::path dir = fs::temp_directory_path() / ("flopwatt_gpt2_step_roof_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RooflineSet roofs;
  Ceilings c;
  c.label = "cpu";
  c.peak_flop_per_s["fp32"] = 100e9;
  c.capacity_bytes = {{"l2", 1e6}};
  c.memory = {{"l2_triad", 50e9}, {"l2_copy", 40e9}, {"dram_triad", 10e9}};
  roofs.host = c;
  const auto ms = train_against(roofs, dir);
  double sum = 0;
  const Measurement* step = nullptr;
  int ops = 0;
  for (const auto& m : ms) {
    if (m.workload != "gpt2" || m.skipped) continue;
    if (m.op == "step") {
      step = &m;
      continue;
    }
    if (m.layer) continue;  // per-layer rows repeat the totals
    SCOPED_TRACE(m.op + " " + m.pass.value_or(""));
    ASSERT_TRUE(m.roof_time_s);
    ASSERT_TRUE(m.working_set_bytes);
    EXPECT_DOUBLE_EQ(*m.working_set_bytes * *m.count_per_step, *m.bytes);
    // An op under 1 MB is bounded by the "L2": its triad ops by l2_triad, its
    // copies by l2_copy, the rest by the fastest there; larger ones by DRAM.
    const bool l2 = *m.working_set_bytes <= 1e6;
    const std::string want = !l2 ? "dram_triad" : m.memory_pattern == "copy" ? "l2_copy" : "l2_triad";
    EXPECT_EQ(m.roof_ceiling, want);
    const double bw = want == "l2_copy" ? 40e9 : want == "l2_triad" ? 50e9 : 10e9;
    EXPECT_DOUBLE_EQ(*m.roof_time_s, std::max(m.flop / 100e9, *m.bytes / bw));
    sum += *m.roof_time_s;
    ++ops;
  }
  EXPECT_GT(ops, 20);
  ASSERT_TRUE(step);
  ASSERT_TRUE(step->roof_time_s);
  EXPECT_NEAR(*step->roof_time_s, sum, 1e-12 * sum);
  EXPECT_DOUBLE_EQ(*step->fraction_of_roof, *step->roof_time_s / step->time_s.median);
  EXPECT_EQ(step->roof_bound, "ops");
  EXPECT_DOUBLE_EQ(*step->roof_flop_per_s, step->flop / *step->roof_time_s);
  // flopwatt_bench's step roof, computed without running a step, is the same sum.
  const Gpt2Options o = tiny_options();
  Gpt2Runner runner(o, gpt2::preset("tiny", "--model"));
  const auto limit = gpt2_step_roof_limit(gpt2::preset("tiny", "--model"), o.batch, o.seq, o.dtype, runner.backend(),
                                          roofs);
  ASSERT_TRUE(limit);
  EXPECT_NEAR(*limit, *step->roof_time_s, 1e-12 * *limit);
  EXPECT_FALSE(gpt2_step_roof_limit(gpt2::preset("tiny", "--model"), o.batch, o.seq, o.dtype, runner.backend(), {}))
      << "no host ceilings, no limit";
  fs::remove_all(dir);
}

// Host ceilings with these peaks, one L2 stream of `bytes_per_s` that holds
// any working set, and an exp rate if given.
RooflineSet host_roofs(std::map<std::string, double> peaks, double bytes_per_s,
                       std::optional<double> exp_per_s = std::nullopt) {
  Ceilings c;
  c.label = "cpu";
  c.peak_flop_per_s = std::move(peaks);
  c.capacity_bytes = {{"l2", 1e12}};
  c.memory = {{"l2_triad", bytes_per_s}};
  c.exp_per_s = exp_per_s;
  RooflineSet roofs;
  roofs.host = c;
  return roofs;
}

// In a bf16 run only the GEMMs compute in bf16: every other op's roof is over
// the fp32 peak, and the step's limit sums those roofs.
TEST(Gpt2Runner, OnlyGemmOpsTakeTheBf16Peak) {
  const gpt2::Config cfg = gpt2::preset("tiny", "--model");
  Gpt2Runner runner(tiny_options(), cfg);
  // Peaks slow enough that every op is compute-bound.
  const RooflineSet roofs = host_roofs({{"fp32", 1e9}, {"bf16", 2e9}}, 1e15);
  double limit = 0;
  int gemms = 0, others = 0;
  for (int i = 0; i < gpt2::kNumOps; ++i) {
    const auto op = gpt2::Op(i);
    if (gpt2::op_occurrences(op, cfg) == 0) continue;
    Measurement m = gpt2_op_roof_row(op, cfg, 2, 8, DType::BF16, &runner.backend());
    SCOPED_TRACE(m.op + " " + m.pass.value_or(""));
    // flopwatt_bench's rows of the host's own kernels take no backend: the same costs.
    const Measurement host = gpt2_op_roof_row(op, cfg, 2, 8, DType::BF16, nullptr);
    EXPECT_EQ(host.backend, "host");
    EXPECT_EQ(m.backend, runner.backend().name());
    EXPECT_EQ(host.flop, m.flop);
    EXPECT_EQ(host.bytes, m.bytes);
    EXPECT_EQ(host.exps, m.exps);
    EXPECT_EQ(host.memory_pattern, m.memory_pattern);
    EXPECT_EQ(host.roof_peak_dtype, m.roof_peak_dtype);
    place_measurement(m, roofs);
    EXPECT_EQ(m.dtype, "bf16");
    const bool gemm = gpt2::op_info(op).gemm;
    (gemm ? gemms : others)++;
    EXPECT_EQ(m.roof_peak_dtype, gemm ? "bf16" : "fp32");
    ASSERT_TRUE(m.roof_time_s);
    EXPECT_DOUBLE_EQ(*m.roof_time_s, std::max(m.flop / (gemm ? 2e9 : 1e9), *m.bytes / 1e15));
    limit += *m.roof_time_s;
  }
  EXPECT_GT(gemms, 0);
  EXPECT_GT(others, 0);
  const auto step = gpt2_step_roof_limit(cfg, 2, 8, DType::BF16, runner.backend(), roofs);
  ASSERT_TRUE(step);
  EXPECT_NEAR(*step, limit, 1e-12 * limit);
}

// Each op row carries the op table's exps for all its occurrences in a step,
// and with an exp rate slow enough the step's limit is those ops' exp time.
TEST(Gpt2Runner, OpRowsCarryTheirExpsIntoTheStepsLimit) {
  const gpt2::Config cfg = gpt2::preset("tiny", "--model");
  Gpt2Runner runner(tiny_options(), cfg);
  const RooflineSet roofs = host_roofs({{"fp32", 1e15}}, 1e18, 1e3);  // every op with an exp is bound by it
  double exp_time = 0, rest = 0;
  for (int i = 0; i < gpt2::kNumOps; ++i) {
    const auto op = gpt2::Op(i);
    if (gpt2::op_occurrences(op, cfg) == 0) continue;
    Measurement m = gpt2_op_roof_row(op, cfg, 2, 8, DType::F32, &runner.backend());
    SCOPED_TRACE(m.op + " " + m.pass.value_or(""));
    const double exps = gpt2::op_occurrences(op, cfg) * gpt2::op_cost(op, cfg, 2, 8, DType::F32).exps;
    EXPECT_EQ(m.exps.value_or(0.0), exps);
    place_measurement(m, roofs);
    ASSERT_TRUE(m.roof_time_s);
    if (exps > 0) {
      EXPECT_EQ(m.roof_bound, "exp");
      EXPECT_DOUBLE_EQ(*m.roof_time_s, exps / 1e3);
      exp_time += *m.roof_time_s;
    } else {
      EXPECT_NE(m.roof_bound, "exp");
      rest += *m.roof_time_s;
    }
  }
  EXPECT_GT(exp_time, 1.0) << "GELU, attention and the cross-entropy have exps";
  const auto step = gpt2_step_roof_limit(cfg, 2, 8, DType::F32, runner.backend(), roofs);
  ASSERT_TRUE(step);
  EXPECT_NEAR(*step, exp_time + rest, 1e-12 * *step);
}

}  // namespace
}  // namespace flopwatt
