#include "harness/runners/gemm_runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <fstream>
#include <map>
#include <thread>

#include "harness/run/counters.h"
#include "tests/harness/runners/clock_perf.h"

namespace flopwatt {
namespace {

// A tiny exact GEMM for the test's own oracle, named like the real one so the
// runner uses it instead of constructing cpu:reference.
class NaiveBackend : public Backend {
 public:
  explicit NaiveBackend(std::string name, float error = 0, bool sim = false) : name_(std::move(name)), error_(error), sim_(sim) {}
  std::string name() const override { return name_; }
  Availability availability() const override { return {true, ""}; }
  bool supports(const GemmDesc& d) const override { return d.dtype_in == DType::F32 && !(d.trans_a && d.trans_b); }
  void gemm(const GemmDesc& d, const void* Av, const void* Bv, void* Cv) override {
    const float* A = static_cast<const float*>(Av);
    const float* B = static_cast<const float*>(Bv);
    float* C = static_cast<float*>(Cv);
    for (std::int64_t i = 0; i < d.M; ++i)
      for (std::int64_t j = 0; j < d.N; ++j) {
        double s = 0;
        for (std::int64_t k = 0; k < d.K; ++k) {
          const double a = d.trans_a ? A[k * d.eff_lda() + i] : A[i * d.eff_lda() + k];
          const double b = d.trans_b ? B[j * d.eff_ldb() + k] : B[k * d.eff_ldb() + j];
          s += a * b;
        }
        float& c = C[i * d.eff_ldc() + j];
        c = float(d.alpha * s + (d.beta != 0 ? d.beta * c : 0)) + error_;
      }
    calls_++;
  }
  bool simulated() const override { return sim_; }
  std::optional<Breakdown> last_breakdown() const override {
    if (!sim_) return std::nullopt;
    return Breakdown{0.001, 0.002, 0.001, 0.0001, 0};
  }
  std::optional<std::pair<std::string, double>> last_modelled_energy_j() const override {
    if (!sim_) return std::nullopt;
    return std::make_pair(std::string("npu-model:test"), 0.01);
  }
  int calls_ = 0;

 private:
  std::string name_;
  float error_;
  bool sim_;
};

TEST(GemmRunner, VerifiesTimesAndMarksFailuresAndSkips) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("flopwatt_runner_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  NaiveBackend ref("cpu:reference"), good("cpu:good"), bad("cpu:bad", 0.5f), sim("npu:sim-test", 0, true);
  Session session(flopwatt::Run{}, dir.string());
  PowerOptions po;
  po.power = "none";
  EnergyMeter meter(po);
  GemmRunOptions o;
  o.shapes = parse_shapes("7,65,3;1,1,1;5,6,7,TN;3,4,5,TT", "--shapes");
  o.timing.min_time_s = 0;
  o.timing.min_reps = 4;
  std::size_t seen = 0;
  ASSERT_TRUE(run_gemm_suite({&ref, &good, &bad, &sim}, o, session, meter,
                             [&](const Measurement&, std::size_t done, std::size_t total) {
                               EXPECT_EQ(done, ++seen);
                               EXPECT_EQ(total, 16u);
                             }));
  const auto& ms = session.run().measurements;
  ASSERT_EQ(ms.size(), 16u);
  for (const auto& m : ms) {
    if (m.layout == "TT") {
      EXPECT_TRUE(m.skipped.has_value()) << m.backend;
      continue;
    }
    ASSERT_FALSE(m.skipped.has_value());
    ASSERT_TRUE(m.verified.has_value());
    EXPECT_EQ(*m.verified, m.backend != "cpu:bad") << m.backend << " " << m.op;
    EXPECT_GE(m.reps, m.backend == "npu:sim-test" ? 3 : 4);
    EXPECT_EQ(m.rep_times_s.size(), std::size_t(m.reps));
    EXPECT_GT(m.flop_per_s, 0);
    if (m.backend == "npu:sim-test") {
      EXPECT_TRUE(m.simulated);
      EXPECT_NEAR(m.time_s.median, 0.0041, 1e-12);  // the modelled time, not the host's
      ASSERT_TRUE(m.energy.count("npu-model:test"));
      EXPECT_NEAR(m.energy.at("npu-model:test").j, 0.01 * m.reps, 1e-12);
      ASSERT_TRUE(m.breakdown_s.has_value());
    }
  }
  fs::remove_all(dir);
}

TEST(GemmRunner, CountsHardwareEventsOverEachMeasurementWindow) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("flopwatt_runner_ctr_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto fake = std::make_unique<ClockPerf>();
  ClockPerf* perf = fake.get();
  // 0.2 ms per enable: a window opened inside the first timed repetition (as
  // it once was) misses that much of it, and one opened before the loop's
  // first timestamp misses none.
  perf->enable_cost_ns = 200000;
  RunCounters counters("perf::PERF_COUNT_HW_CPU_CYCLES,perf::PERF_COUNT_HW_INSTRUCTIONS", "/", "--counters",
                       std::move(fake));
  if (!counters.active() && counters.summary().find("libpfm4") != std::string::npos)
    GTEST_SKIP() << "built without libpfm4: " << counters.summary();
  ASSERT_TRUE(counters.active()) << counters.summary();
  NaiveBackend ref("cpu:reference"), good("cpu:good");
  Session session(flopwatt::Run{}, dir.string());
  PowerOptions po;
  po.power = "none";
  EnergyMeter meter(po);
  GemmRunOptions o;
  o.shapes = parse_shapes("40,40,40;2,2,2", "--shapes");
  // 0.1 s windows: each event is enabled and disabled by its own call, so a
  // thread descheduled between two calls (ctest -j on a loaded machine) skews
  // one event's window against the other's by that gap. With 20 ms windows
  // and a 1% band this test failed once in a loaded suite run (and passed
  // alone five times).
  o.timing.min_time_s = 0.1;
  o.timing.min_reps = 3;
  o.counters = &counters;
  ASSERT_TRUE(run_gemm_suite({&ref, &good}, o, session, meter, {}));
  const auto& ms = session.run().measurements;
  ASSERT_EQ(ms.size(), 4u);
  EXPECT_EQ(perf->enables, 2 * 4);  // one window per measurement, each event
  for (const auto& m : ms) {
    ASSERT_EQ(m.counters.size(), 2u) << m.backend << " " << m.op;
    const auto cycles = m.counters.at("perf::PERF_COUNT_HW_CPU_CYCLES");
    const auto instructions = m.counters.at("perf::PERF_COUNT_HW_INSTRUCTIONS");
    ASSERT_TRUE(cycles && instructions);
    // The window holds the timed loop: it opens before the loop's first
    // timestamp and closes after its last, so it is at least the loop's total
    // (1 ns for the sum's rounding), and not the verification or the operand
    // set-up before it (well under a second here).
    const double loop_ns = m.time_s.total * 1e9;
    // Under 0.08 s more than the loop: less than another measurement's loop,
    // so a window that ran on over the next measurement fails.
    EXPECT_GE(*cycles, loop_ns - 1) << m.op;
    EXPECT_LT(*cycles, loop_ns + 0.08e9) << m.op;
    EXPECT_NEAR(*instructions / *cycles, 2.0, 0.02);
  }
  // run.json carries them.
  const nlohmann::json j = to_json(ms[0]);
  EXPECT_TRUE(j["counters"]["perf::PERF_COUNT_HW_CPU_CYCLES"].is_number());
  fs::remove_all(dir);
}

// On a machine whose memory controller is counted (the Tiger Lake fixture's
// free-running IMC, each count a 64-byte line, here one per ns for reads and
// one for writes), each GEMM row's intensity is over the counted bytes.
TEST(GemmRunner, CountedDramBytesSetTheIntensity) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("flopwatt_runner_dram_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RunCounters counters("dram_read_bytes,dram_write_bytes", std::string(FLOPWATT_TEST_FIXTURES) + "/pmu/tigerlake-laptop",
                       "--counters", std::make_unique<ClockPerf>());
  ASSERT_TRUE(counters.active()) << counters.summary();
  EXPECT_NE(counters.summary().find("FLOP/B marked #"), std::string::npos) << counters.summary();
  NaiveBackend ref("cpu:reference");
  Session session(flopwatt::Run{}, dir.string());
  PowerOptions po;
  po.power = "none";
  EnergyMeter meter(po);
  GemmRunOptions o;
  o.shapes = parse_shapes("40,40,40", "--shapes");
  o.timing.min_time_s = 0.02;
  o.timing.min_reps = 3;
  o.counters = &counters;
  ASSERT_TRUE(run_gemm_suite({&ref}, o, session, meter, {}));
  for (const auto& m : session.run().measurements) {
    ASSERT_TRUE(m.dram_bytes_measured) << m.op;
    EXPECT_EQ(m.intensity_basis, "measured");
    const double loop_ns = m.time_s.total * 1e9;
    EXPECT_GE(*m.dram_bytes_measured * m.reps, 0.999 * 2 * 64 * loop_ns);
    EXPECT_LT(*m.dram_bytes_measured * m.reps, 2 * 64 * (loop_ns + 0.05e9));
    EXPECT_DOUBLE_EQ(*m.intensity, m.flop / *m.dram_bytes_measured);
    EXPECT_EQ(to_json(m)["intensity_basis"], "measured");
  }
  fs::remove_all(dir);
}

TEST(GemmRunner, NoCountersWithoutAPmu) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("flopwatt_runner_nopmu_" + std::to_string(::getpid()));
  const fs::path root = dir / "root";
  fs::create_directories(root / "sys/bus/event_source/devices/software");
  // The real perf_event_open against a root with no `cpu` PMU: on a machine
  // with one, the open may succeed, so only the unavailable case is checked.
  RunCounters counters("default", root.string());
  if (counters.active()) GTEST_SKIP() << "this machine counts hardware events";
  EXPECT_NE(counters.summary().find("no CPU PMU is exposed"), std::string::npos) << counters.summary();
  NaiveBackend ref("cpu:reference");
  Session session(flopwatt::Run{}, (dir / "out").string());
  PowerOptions po;
  po.power = "none";
  EnergyMeter meter(po);
  GemmRunOptions o;
  o.shapes = parse_shapes("4,4,4", "--shapes");
  o.timing.min_time_s = 0;
  o.counters = &counters;
  ASSERT_TRUE(run_gemm_suite({&ref}, o, session, meter, {}));
  EXPECT_TRUE(session.run().measurements.at(0).counters.empty());
  fs::remove_all(dir);
}

// A simulated device whose second timed repetition takes 10x the others in the
// model, at the same modelled energy per repetition.
class StallingSim : public NaiveBackend {
 public:
  StallingSim() : NaiveBackend("npu:sim-stall", 0, true) {}
  std::optional<Breakdown> last_breakdown() const override {
    // Call 1 is the warm-up repetition, 2 the first timed one, 3 the stall.
    const double compute = ++breakdowns_ == 3 ? 0.020 : 0.002;
    return Breakdown{0, compute, 0, 0, 0};
  }
  mutable int breakdowns_ = 0;
};

// A host backend whose third call sleeps: one repetition far above the median.
class StallingHost : public NaiveBackend {
 public:
  StallingHost() : NaiveBackend("cpu:stall") {}
  void gemm(const GemmDesc& d, const void* A, const void* B, void* C) override {
    NaiveBackend::gemm(d, A, B, C);
    if (calls_ == 4) std::this_thread::sleep_for(std::chrono::milliseconds(40));  // verify, warm-up, 2 timed
  }
};

TEST(GemmRunner, StalledRepetitionIsFlaggedAndFlopPerJSharesTheWindowBasis) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("flopwatt_runner_stall_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  NaiveBackend ref("cpu:reference"), steady("cpu:steady");
  StallingSim sim;
  StallingHost host;
  Session session(flopwatt::Run{}, dir.string());
  PowerOptions po;
  po.power = "none";
  EnergyMeter meter(po);
  GemmRunOptions o;
  o.shapes = parse_shapes("7,65,3", "--shapes");
  o.timing.min_time_s = 0;
  o.timing.min_reps = 5;
  ASSERT_TRUE(run_gemm_suite({&ref, &steady, &sim, &host}, o, session, meter, nullptr));
  const auto& ms = session.run().measurements;
  ASSERT_EQ(ms.size(), 4u);
  for (const auto& m : ms) {
    ASSERT_TRUE(m.stalled.has_value()) << m.backend;
    ASSERT_TRUE(m.flop_per_s_window.has_value()) << m.backend;
    ASSERT_TRUE(m.rep_max_over_median.has_value()) << m.backend;
    double total = 0;
    for (double t : m.rep_times_s) total += t;
    EXPECT_NEAR(*m.flop_per_s_window, m.flop * m.reps / total, 1e-9 * *m.flop_per_s_window) << m.backend;
  }
  const Measurement& s = ms[2];
  ASSERT_EQ(s.backend, "npu:sim-stall");
  ASSERT_EQ(s.reps, 3);  // a simulator runs 3 repetitions (its times are modelled)
  EXPECT_TRUE(*s.stalled);
  EXPECT_NEAR(*s.rep_max_over_median, 10.0, 1e-9);
  // Modelled: 3 reps of 0.002 s except one of 0.020 s, 0.01 J each.
  EXPECT_NEAR(*s.flop_per_s_window, s.flop * 3 / 0.024, 1e-6 * s.flop);
  EXPECT_NEAR(s.flop_per_s, s.flop / 0.002, 1e-6 * s.flop);
  const EnergyFigures& e = s.energy.at("npu-model:test");
  ASSERT_TRUE(e.flop_per_j.has_value());
  // Same basis: FLOP/J x mean power over the window is the window's FLOP/s,
  // not the median's (which is 4x higher here).
  EXPECT_NEAR(*e.flop_per_j * e.avg_power_w, *s.flop_per_s_window, 1e-9 * *s.flop_per_s_window);
  EXPECT_GT(s.flop_per_s, 3.9 * *s.flop_per_s_window);

  const Measurement& h = ms[3];
  ASSERT_EQ(h.backend, "cpu:stall");
  EXPECT_TRUE(*h.stalled);
  EXPECT_GT(*h.rep_max_over_median, 2.0);

  // Both reach run.json and measurements.csv.
  const nlohmann::json j = to_json(session.run());
  EXPECT_EQ(j["measurements"][2]["stalled"], true);
  EXPECT_TRUE(j["figures_basis"].contains("flop_per_s_window"));
  std::ifstream csv(dir / "measurements.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_NE(header.find(",flop_per_s_window,rep_max_over_median,stalled,"), std::string::npos) << header;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace flopwatt
