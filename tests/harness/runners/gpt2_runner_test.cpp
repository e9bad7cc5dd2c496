#include "harness/runners/gpt2_runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

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

}  // namespace
}  // namespace flopwatt
