#include "harness/run/roofline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cpu/perf_counters.h"

namespace flopwatt {
namespace {

TEST(Roofline, MemoryBoundBelowTheRidgeComputeBoundAbove) {
  // Peak 100 GFLOP/s, 10 GB/s: the ridge is at 10 FLOP/B.
  const auto low = place_on_roof(1e9, 1e9, 5e9, 100e9, 10e9);  // 1 FLOP/B
  ASSERT_TRUE(low);
  EXPECT_DOUBLE_EQ(low->intensity, 1.0);
  EXPECT_DOUBLE_EQ(low->attainable_flop_per_s, 10e9);
  EXPECT_DOUBLE_EQ(low->fraction, 0.5);
  EXPECT_EQ(low->bound, "memory");
  const auto high = place_on_roof(1e11, 1e9, 80e9, 100e9, 10e9);  // 100 FLOP/B
  ASSERT_TRUE(high);
  EXPECT_DOUBLE_EQ(high->attainable_flop_per_s, 100e9);
  EXPECT_DOUBLE_EQ(high->fraction, 0.8);
  EXPECT_EQ(high->bound, "compute");
  const auto ridge = place_on_roof(1e10, 1e9, 1e9, 100e9, 10e9);
  ASSERT_TRUE(ridge);
  EXPECT_EQ(ridge->bound, "compute");
  EXPECT_DOUBLE_EQ(ridge->attainable_flop_per_s, 100e9);
}

TEST(Roofline, NothingToPlaceWithoutFlopBytesOrCeilings) {
  EXPECT_FALSE(place_on_roof(0, 1e9, 1e9, 1e11, 1e10));
  EXPECT_FALSE(place_on_roof(1e9, 0, 1e9, 1e11, 1e10));
  EXPECT_FALSE(place_on_roof(1e9, 1e9, 1e9, 0, 1e10));
  EXPECT_FALSE(place_on_roof(1e9, 1e9, 1e9, 1e11, 0));
  EXPECT_FALSE(place_on_roof(1e9, 1e9, NAN, 1e11, 1e10));
}

Run peak_run() {
  Run r;
  auto add = [&](std::string workload, std::string op, std::string dtype, int threads, double flop_per_s,
                 std::optional<double> bytes, double median, bool verified) {
    Measurement m;
    m.workload = workload;
    m.op = op;
    m.dtype = dtype;
    m.threads = threads;
    m.flop_per_s = flop_per_s;
    m.bytes = bytes;
    m.time_s.median = median;
    if (workload == "bandwidth") m.verified = verified;
    r.measurements.push_back(m);
  };
  add("peak", "avx2", "fp32", 1, 50e9, {}, 0, true);
  add("peak", "avx2", "fp32", 2, 90e9, {}, 0, true);
  add("peak", "avx512f", "fp32", 2, 120e9, {}, 0, true);
  add("bandwidth", "dram_read", "fp32", 2, 0, 1e9, 0.1, true);    // 10 GB/s
  add("bandwidth", "dram_triad", "fp32", 2, 0, 1.2e9, 0.1, true); // 12 GB/s
  add("bandwidth", "dram_copy", "fp32", 2, 0, 9e9, 0.1, false);   // 90 GB/s, but its data was wrong
  add("bandwidth", "l1_read", "fp32", 2, 0, 1e10, 0.1, true);
  add("bandwidth", "dram_read", "fp32", 1, 0, 5e8, 0.1, true);
  add("exp", "exp", "fp32", 2, 15e9, {}, 0, true);
  add("exp", "exp", "fp32", 1, 8e9, {}, 0, true);
  Measurement skipped;
  skipped.workload = "peak";
  skipped.op = "amx-bf16";
  skipped.dtype = "bf16";
  skipped.threads = 2;
  skipped.flop_per_s = 1e15;
  skipped.skipped = "no AMX";
  r.measurements.push_back(skipped);
  return r;
}

TEST(Roofline, CeilingsFromAPeakRunTakeTheThreadCountBestPeakAndVerifiedDram) {
  const auto c = ceilings_from_peak_run(peak_run(), 2);
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->peak_flop_per_s.at("fp32"), 120e9);
  EXPECT_EQ(c->peak_flop_per_s.count("bf16"), 0u);  // the skipped AMX row does not count
  ASSERT_TRUE(c->dram());
  EXPECT_EQ(c->dram()->name, "dram_triad");
  EXPECT_DOUBLE_EQ(c->dram()->bytes_per_s, 12e9);
  // bf16 falls back to the fp32 peak.
  EXPECT_DOUBLE_EQ(*c->peak("bf16"), 120e9);
  const auto one = ceilings_from_peak_run(peak_run(), 1);
  ASSERT_TRUE(one);
  EXPECT_DOUBLE_EQ(one->dram()->bytes_per_s, 5e9);
  EXPECT_FALSE(ceilings_from_peak_run(peak_run(), 4));
  // The exp rate is a ceiling of its own, not an fp32 peak of 15 GFLOP/s.
  EXPECT_EQ(c->exp_per_s, 15e9);
  EXPECT_EQ(one->exp_per_s, 8e9);
  EXPECT_DOUBLE_EQ(one->peak_flop_per_s.at("fp32"), 50e9);
}

TEST(Roofline, CeilingsRoundTripThroughJson) {
  auto c = *ceilings_from_peak_run(peak_run(), 2);
  c.modelled_energy = EnergyFit{};
  c.modelled_energy->j_per_byte = 2e-11;
  const Ceilings back = ceilings_from_json(to_json(c));
  EXPECT_EQ(back.peak_flop_per_s, c.peak_flop_per_s);
  ASSERT_EQ(back.memory.size(), c.memory.size());
  EXPECT_DOUBLE_EQ(back.dram()->bytes_per_s, 12e9);
  ASSERT_TRUE(back.modelled_energy);
  EXPECT_DOUBLE_EQ(back.modelled_energy->j_per_byte, 2e-11);
  EXPECT_EQ(back.exp_per_s, 15e9);
  c.exp_per_s.reset();
  EXPECT_FALSE(ceilings_from_json(to_json(c)).exp_per_s) << "ceilings stored before the exp rate have none";
  c.core_round_trip_ns = {330.5, 81.25};
  EXPECT_EQ(ceilings_from_json(to_json(c)).core_round_trip_ns, c.core_round_trip_ns);
  nlohmann::json old = to_json(c);
  old.erase("core_round_trip_ns");
  EXPECT_TRUE(ceilings_from_json(old).core_round_trip_ns.empty()) << "ceilings stored before it have none";
}

// A run's step probes against those its ceilings were measured under: a note
// only for the steps more than a factor 2 from every ceilings' probe.
TEST(Roofline, PlacementNoteNamesTheStepsInAnotherPlacement) {
  Ceilings c;
  EXPECT_FALSE(placement_note(c, {80, 85})) << "ceilings without probes";
  c.core_round_trip_ns = {330, 341};
  EXPECT_FALSE(placement_note(c, {})) << "a run without probes";
  EXPECT_FALSE(placement_note(c, {300, 357, 170})) << "within a factor 2 of one of them";
  const auto all = placement_note(c, {84, 79, 86});
  ASSERT_TRUE(all);
  EXPECT_NE(all->find("3 of 3 steps ran with the cores 79-86 ns apart"), std::string::npos) << *all;
  EXPECT_NE(all->find("measured with them 330-341 ns apart"), std::string::npos) << *all;
  const auto some = placement_note(c, {340, 75, 700});
  ASSERT_TRUE(some);
  EXPECT_NE(some->find("2 of 3 steps ran with the cores 75-700 ns apart"), std::string::npos) << *some;
  c.core_round_trip_ns = {80, 330};  // the placement changed while they were measured
  EXPECT_FALSE(placement_note(c, {84, 320}));
}

TEST(Roofline, PlaceMeasurementUsesHostForRealRowsAndTheModelForSimulatedOnes) {
  RooflineSet roofs;
  roofs.host = *ceilings_from_peak_run(peak_run(), 2);
  Ceilings npu;
  npu.label = "npu:sim-x (modelled)";
  npu.peak_flop_per_s["bf16"] = 1e12;
  npu.memory.push_back({"dram_model", 20e9});
  roofs.modelled["npu:sim-x"] = npu;

  Measurement cpu;
  cpu.workload = "gpt2";
  cpu.op = "adamw";
  cpu.flop = 1e9;
  cpu.bytes = 1e9;  // 1 FLOP/B: memory roof 12 GFLOP/s
  cpu.flop_per_s = 6e9;
  place_measurement(cpu, roofs);
  ASSERT_TRUE(cpu.fraction_of_roof);
  EXPECT_DOUBLE_EQ(*cpu.intensity, 1.0);
  EXPECT_DOUBLE_EQ(*cpu.roof_flop_per_s, 12e9);
  EXPECT_DOUBLE_EQ(*cpu.fraction_of_roof, 0.5);
  EXPECT_EQ(*cpu.roof_bound, "memory");

  Measurement sim = cpu;
  sim = Measurement{};
  sim.workload = "gemm";
  sim.backend = "npu:sim-x";
  sim.dtype = "bf16";
  sim.simulated = true;
  sim.flop = 1e12;
  sim.bytes = 1e9;  // 1000 FLOP/B: compute bound at 1 TFLOP/s
  sim.flop_per_s = 0.25e12;
  place_measurement(sim, roofs);
  EXPECT_DOUBLE_EQ(*sim.roof_flop_per_s, 1e12);
  EXPECT_DOUBLE_EQ(*sim.fraction_of_roof, 0.25);
  EXPECT_EQ(*sim.roof_bound, "compute");

  Measurement unknown = sim;
  unknown.intensity.reset();
  unknown.roof_flop_per_s.reset();
  unknown.fraction_of_roof.reset();
  unknown.backend = "npu:sim-other";
  place_measurement(unknown, roofs);
  EXPECT_TRUE(unknown.intensity);  // intensity needs no ceiling
  EXPECT_FALSE(unknown.fraction_of_roof);

  Measurement step = sim;
  step = Measurement{};
  step.workload = "gpt2";
  step.op = "step";
  step.backend = "npu:sim-x";
  step.simulated = true;
  step.flop = 1e9;
  step.bytes = 1e8;
  step.flop_per_s = 1e9;
  place_measurement(step, roofs);
  EXPECT_FALSE(step.intensity);

  Measurement skipped = cpu;
  skipped = Measurement{};
  skipped.flop = 1e9;
  skipped.bytes = 1e9;
  skipped.skipped = "backend unavailable";
  place_measurement(skipped, roofs);
  EXPECT_FALSE(skipped.intensity);
}

// Counted DRAM bytes (per window, over all repetitions) replace the analytic
// bytes: 3 reps moving 6 GB counted is 2 GB per rep, 0.5 FLOP/B.
TEST(Roofline, MeasuredDramBytesReplaceTheAnalyticOnes) {
  RooflineSet roofs;
  roofs.host = *ceilings_from_peak_run(peak_run(), 2);
  Measurement m;
  m.workload = "gemm";
  m.op = "gemm";
  m.reps = 3;
  m.flop = 1e9;
  m.bytes = 1e9;
  m.flop_per_s = 3e9;
  m.counters[cpu::kDramReadBytes] = 4.5e9;
  m.counters[cpu::kDramWriteBytes] = 1.5e9;
  place_measurement(m, roofs);
  EXPECT_EQ(m.intensity_basis, "measured");
  EXPECT_DOUBLE_EQ(*m.dram_bytes_measured, 2e9);
  EXPECT_DOUBLE_EQ(*m.intensity, 0.5);
  EXPECT_DOUBLE_EQ(*m.roof_flop_per_s, 6e9);  // 0.5 FLOP/B x 12 GB/s
  EXPECT_DOUBLE_EQ(*m.fraction_of_roof, 0.5);

  // One of the two not counted (or zero): analytic, and said so.
  Measurement half = m;
  half.intensity.reset();
  half.dram_bytes_measured.reset();
  half.counters[cpu::kDramWriteBytes] = std::nullopt;
  place_measurement(half, roofs);
  EXPECT_EQ(half.intensity_basis, "analytic");
  EXPECT_FALSE(half.dram_bytes_measured);
  EXPECT_DOUBLE_EQ(*half.intensity, 1.0);

  // A simulated row's bytes were never on the host's memory controllers.
  Measurement sim = m;
  sim.intensity.reset();
  sim.dram_bytes_measured.reset();
  sim.simulated = true;
  place_measurement(sim, roofs);
  EXPECT_FALSE(sim.dram_bytes_measured);
  EXPECT_DOUBLE_EQ(*sim.intensity, 1.0);
}

// Ceilings as `run peak` stores them on a 2-thread machine with 2 MiB of L2
// and 32 MiB of LLC between the threads (rates in GB/s, made up).
Ceilings levelled() {
  Ceilings c;
  c.label = "cpu";
  c.threads = 2;
  c.peak_flop_per_s["fp32"] = 200e9;
  c.capacity_bytes = {{"l1", 64 << 10}, {"l2", 2 << 20}, {"llc", 32 << 20}};
  for (auto [name, gb] : std::initializer_list<std::pair<const char*, double>>{
           {"l2_triad", 300}, {"l2_read", 400}, {"llc_triad", 150}, {"llc_r1u3", 170}, {"llc_read", 180},
           {"dram_read", 39}, {"dram_copy", 30}, {"dram_copy_nt", 45}, {"dram_triad", 35}, {"dram_r1u3", 95}})
    c.memory.push_back({name, gb * 1e9});
  return c;
}

// The roof of an op is its own pattern at the level that holds its bytes:
// AdamW's 3.5 GB under DRAM's r1u3, a 2.4 MB residual add under the LLC's
// triad, never the fastest DRAM stream for everyone.
TEST(Roofline, MemoryCeilingIsThePatternAtTheLevelHoldingTheWorkingSet) {
  const Ceilings c = levelled();
  EXPECT_EQ(c.memory_for("r1u3", 3.49e9)->name, "dram_r1u3");
  EXPECT_EQ(c.memory_for("triad", 2.36e6)->name, "llc_triad");
  EXPECT_EQ(c.memory_for("triad", 1.5e6)->name, "l2_triad");
  EXPECT_EQ(c.memory_for("triad", 32.0 * (1 << 20))->name, "llc_triad") << "exactly the capacity still fits";
  // The faster store kind bounds either kernel.
  EXPECT_EQ(c.memory_for("copy", 1e9)->name, "dram_copy_nt");
  // No row of the pattern at the level: the level's fastest, an upper bound.
  EXPECT_EQ(c.memory_for("update", 1e9)->name, "dram_r1u3");
  EXPECT_EQ(c.memory_for("", 2e6)->name, "l2_read");
  // A level with no rows at all (the L1 here): DRAM's fastest, as before levels.
  EXPECT_EQ(c.memory_for("triad", 1e3)->name, "dram_r1u3");
  // Unknown size, or ceilings stored without capacities: DRAM.
  EXPECT_EQ(c.memory_for("triad", 0)->name, "dram_triad");
  Ceilings old = c;
  old.capacity_bytes.clear();
  EXPECT_EQ(old.memory_for("triad", 1e3)->name, "dram_triad");
  const Ceilings back = ceilings_from_json(to_json(c));
  EXPECT_EQ(back.capacity_bytes, c.capacity_bytes);
}

// A row's roof is over the peak of the precision its arithmetic runs in:
// its dtype, unless the row says otherwise (attention in a bf16 GPT-2 run
// computes in fp32, and against the bf16 peak its roof was twice too high).
TEST(Roofline, RoofPeakIsTheRowsArithmeticPrecision) {
  RooflineSet roofs;
  roofs.host = levelled();
  roofs.host->peak_flop_per_s["bf16"] = 400e9;
  Measurement attn;
  attn.workload = "gpt2";
  attn.op = "attn";
  attn.dtype = "bf16";
  attn.flop = 1e9;
  attn.bytes = 1e6;  // 1000 FLOP/B: compute-bound at either peak
  attn.flop_per_s = 100e9;
  attn.time_s.median = 0.01;
  Measurement own = attn;
  place_measurement(own, roofs);
  EXPECT_EQ(own.roof_peak_dtype, "bf16") << "no override: the row's dtype";
  EXPECT_DOUBLE_EQ(*own.roof_flop_per_s, 400e9);
  attn.roof_peak_dtype = "fp32";
  place_measurement(attn, roofs);
  EXPECT_EQ(attn.roof_peak_dtype, "fp32");
  EXPECT_DOUBLE_EQ(*attn.roof_flop_per_s, 200e9);
  EXPECT_DOUBLE_EQ(*attn.fraction_of_roof, 0.5);
  EXPECT_DOUBLE_EQ(*attn.roof_time_s, 1e9 / 200e9);
  const Measurement back = measurement_from_json(to_json(attn));
  EXPECT_EQ(back.roof_peak_dtype, "fp32") << "run.json keeps it";
}

TEST(Roofline, PlacedOpsCarryTheirCeilingAndTimeAtTheRoof) {
  RooflineSet roofs;
  roofs.host = levelled();
  Measurement adamw;
  adamw.workload = "gpt2";
  adamw.op = "adamw";
  adamw.pass = "opt";
  adamw.backend = "cpu:llmc";
  adamw.flop = 16 * 124475904.0;
  adamw.bytes = 28 * 124475904.0;
  adamw.working_set_bytes = adamw.bytes;
  adamw.memory_pattern = "r1u3";
  adamw.time_s.median = 0.035;
  adamw.flop_per_s = adamw.flop / 0.035;
  place_measurement(adamw, roofs);
  EXPECT_EQ(adamw.roof_ceiling, "dram_r1u3");
  EXPECT_DOUBLE_EQ(*adamw.roof_time_s, *adamw.bytes / 95e9);
  EXPECT_NEAR(*adamw.fraction_of_roof, *adamw.roof_time_s / 0.035, 1e-12);
  EXPECT_EQ(adamw.roof_bound, "memory");
  EXPECT_TRUE(rows_above_roof({adamw}).empty()) << "100 GB/s is 105% of 95: not flagged";

  // zero_grad has no FLOPs: its fraction is the time at the roof over its own.
  Measurement zero;
  zero.workload = "gpt2";
  zero.op = "zero_grad";
  zero.bytes = 4e6;
  zero.memory_pattern = "write";
  zero.time_s.median = 1e-3;
  place_measurement(zero, roofs);
  EXPECT_EQ(zero.roof_ceiling, "llc_read") << "no llc_write row: the level's fastest";
  EXPECT_DOUBLE_EQ(*zero.roof_time_s, 4e6 / 180e9);
  EXPECT_DOUBLE_EQ(*zero.fraction_of_roof, 4e6 / 180e9 / 1e-3);
  EXPECT_FALSE(zero.roof_flop_per_s);

  // Twice as fast as the roof: flagged, naming the ceiling it beat.
  Measurement fast = adamw;
  fast.time_s.median = 0.5 * *adamw.roof_time_s;
  fast.flop_per_s = fast.flop / fast.time_s.median;
  place_measurement(fast, roofs);
  const auto flagged = rows_above_roof({adamw, fast, zero});
  ASSERT_EQ(flagged.size(), 1u);
  EXPECT_EQ(flagged[0], "adamw opt (cpu:llmc): 200% of dram_r1u3");

  // The step's limit is the sum of its ops' times at their roofs.
  EXPECT_DOUBLE_EQ(*step_roofline_limit({adamw, zero}), *adamw.roof_time_s + *zero.roof_time_s);
  Measurement unplaced;
  unplaced.op = "data";
  EXPECT_FALSE(step_roofline_limit({adamw, unplaced})) << "an op without a roof leaves the step without one";
  Measurement step = adamw;
  step.op = "step";
  step.roof_time_s.reset();
  step.fraction_of_roof.reset();
  place_measurement(step, roofs);
  EXPECT_FALSE(step.fraction_of_roof) << "the runner sums its ops instead";
}

// GELU's sigmoid on 786432 elements: 10 FLOPs each at one FLOP per exp
// would take 39 us at a 200 GFLOP/s peak, but its 786432 exps take 79 us at
// 10 G exp/s. The exp rate is the roof there; where the FLOPs or the bytes
// take longer, it changes nothing.
TEST(Roofline, AnOpsExpsAtTheMeasuredExpRateAreAThirdCeiling) {
  RooflineSet roofs;
  roofs.host = levelled();
  roofs.host->exp_per_s = 10e9;
  const double n4 = 786432;
  Measurement gelu;
  gelu.workload = "gpt2";
  gelu.op = "gelu";
  gelu.pass = "fwd";
  gelu.backend = "cpu:llmc";
  gelu.flop = 10 * n4;
  gelu.bytes = 8 * n4;
  gelu.exps = n4;
  gelu.memory_pattern = "copy";
  gelu.time_s.median = 118e-6;
  gelu.flop_per_s = gelu.flop / gelu.time_s.median;
  Measurement without = gelu;
  without.exps.reset();
  place_measurement(gelu, roofs);
  place_measurement(without, roofs);
  EXPECT_EQ(gelu.roof_bound, "exp");
  EXPECT_DOUBLE_EQ(*gelu.roof_time_s, n4 / 10e9);
  EXPECT_DOUBLE_EQ(*gelu.roof_flop_per_s, gelu.flop / (n4 / 10e9));
  EXPECT_NEAR(*gelu.fraction_of_roof, n4 / 10e9 / 118e-6, 1e-12);
  EXPECT_EQ(without.roof_bound, "compute");
  EXPECT_DOUBLE_EQ(*without.roof_time_s, 10 * n4 / 200e9);
  EXPECT_EQ(gelu.roof_ceiling, without.roof_ceiling) << "the memory ceiling is still named";

  // Ceilings stored before the exp rate: the two ceilings as before.
  RooflineSet old = roofs;
  old.host->exp_per_s.reset();
  Measurement g2 = gelu;
  place_measurement(g2, old);
  EXPECT_EQ(g2.roof_bound, "compute");
  EXPECT_DOUBLE_EQ(*g2.roof_time_s, *without.roof_time_s);

  // Few exps among many FLOPs (attention): the peak still binds.
  Measurement attn = without;
  attn.op = "attn";
  attn.flop = 1e9;
  attn.exps = 1e5;
  attn.flop_per_s = 1e11;
  place_measurement(attn, roofs);
  EXPECT_EQ(attn.roof_bound, "compute");
  EXPECT_DOUBLE_EQ(*attn.roof_time_s, 1e9 / 200e9);

  // The step's limit and run.json carry the exp-bound time; the row keeps its exps.
  EXPECT_DOUBLE_EQ(*step_roofline_limit({gelu, attn}), n4 / 10e9 + 1e9 / 200e9);
  const Measurement back = measurement_from_json(to_json(gelu));
  EXPECT_EQ(back.exps, n4);
  EXPECT_EQ(back.roof_bound, "exp");
  // A roof row built for the step's limit has no time of its own yet: still its roof time.
  Measurement unmeasured = gelu;
  unmeasured.flop_per_s = 0;
  unmeasured.fraction_of_roof.reset();
  place_measurement(unmeasured, roofs);
  EXPECT_DOUBLE_EQ(*unmeasured.roof_time_s, n4 / 10e9);
  EXPECT_FALSE(unmeasured.fraction_of_roof);
}

TEST(EnergyFit, RecoversKnownCoefficientsFromSyntheticMeasurements) {
  // A machine with 20 pJ/FLOP, 300 pJ/B and 6 W constant; 40 ops of random
  // intensity and rate with 1% multiplicative noise on the energy.
  const double jf = 20e-12, jb = 300e-12, w = 6.0;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> logi(-1, 2.5), rate(1e9, 60e9), size(1e8, 1e11);
  std::normal_distribution<double> noise(0, 0.01);
  std::vector<EnergySample> s;
  for (int i = 0; i < 40; ++i) {
    const double flop = size(rng), intensity = std::pow(10.0, logi(rng)), t = flop / rate(rng);
    const double bytes = flop / intensity;
    s.push_back({flop, bytes, t, (jf * flop + jb * bytes + w * t) * (1 + noise(rng))});
  }
  const auto f = fit_energy(s);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->points, 40);
  EXPECT_NEAR(f->j_per_flop, jf, 0.05 * jf);
  EXPECT_NEAR(f->j_per_byte, jb, 0.05 * jb);
  EXPECT_NEAR(f->constant_w, w, 0.05 * w);
  EXPECT_NEAR(f->rms_relative_error, 0.01, 0.005);
  // The stated errors cover the truth: within 4 standard errors each.
  EXPECT_LT(std::fabs(f->j_per_flop - jf), 4 * f->se_j_per_flop);
  EXPECT_LT(std::fabs(f->j_per_byte - jb), 4 * f->se_j_per_byte);
  EXPECT_LT(std::fabs(f->constant_w - w), 4 * f->se_constant_w);
  EXPECT_GT(f->se_j_per_flop, 0);
}

TEST(EnergyFit, ExactDataFitsExactlyAndDegenerateDataIsRefused) {
  std::vector<EnergySample> s = {{1e9, 1e8, 0.1, 0}, {1e10, 1e8, 0.5, 0}, {1e9, 1e9, 0.2, 0}, {5e9, 2e9, 0.05, 0}};
  for (auto& x : s) x.joules = 1e-11 * x.flop + 1e-10 * x.bytes + 2 * x.seconds;
  const auto f = fit_energy(s);
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->j_per_flop, 1e-11, 1e-17);
  EXPECT_NEAR(f->j_per_byte, 1e-10, 1e-16);
  EXPECT_NEAR(f->constant_w, 2, 1e-6);
  EXPECT_LT(f->rms_relative_error, 1e-9);

  EXPECT_FALSE(fit_energy({s[0], s[1], s[2]}));  // three points, three unknowns: no error estimate
  // Every op the same shape and rate: FLOP, bytes and time are proportional.
  std::vector<EnergySample> same(6, EnergySample{1e9, 1e8, 0.1, 3.0});
  for (std::size_t i = 0; i < same.size(); ++i) {
    const double k = 1.0 + double(i);
    same[i] = {1e9 * k, 1e8 * k, 0.1 * k, 3.0 * k};
  }
  EXPECT_FALSE(fit_energy(same));
  // NaN or non-positive energies are left out, not fitted.
  auto with_nan = s;
  with_nan.push_back({1e9, 1e9, 1, NAN});
  with_nan.push_back({1e9, 1e9, 1, -1});
  EXPECT_EQ(fit_energy(with_nan)->points, 4);
}

TEST(EnergyFit, EnergyRoofFallsWithLowIntensityAndLowRate) {
  EnergyFit f;
  f.j_per_flop = 10e-12;
  f.j_per_byte = 100e-12;
  f.constant_w = 5.0;
  const double high = energy_roof_flop_per_j(f, 1000, 100e9);
  const double low = energy_roof_flop_per_j(f, 0.5, 100e9);
  EXPECT_NEAR(high, 1.0 / (10e-12 + 0.1e-12 + 5.0 / 100e9), 1);
  EXPECT_LT(low, high);
  EXPECT_LT(energy_roof_flop_per_j(f, 1000, 1e9), high);
}

TEST(EnergyFit, RunJsonNamesSourceAndMethodAndSkipsStepsAndLowConfidence) {
  flopwatt::Run run;
  auto add = [&](double flop, double bytes, double t, double j, const char* confidence, const char* op) {
    Measurement m;
    m.workload = "gpt2";
    m.op = op;
    m.flop = flop;
    m.bytes = bytes;
    m.reps = 1;
    m.time_s.total = t;
    m.energy["rapl"].j = j;
    m.energy["rapl"].confidence = confidence;
    m.headline_source = "rapl";  // each row's window judged it the headline
    run.measurements.push_back(m);
  };
  const double jf = 1e-11, jb = 1e-10, w = 2;
  const double pts[][3] = {{1e9, 1e8, 0.1}, {1e10, 1e8, 0.5}, {1e9, 1e9, 0.2}, {5e9, 2e9, 0.05}, {3e9, 1e7, 0.3}};
  for (const auto& p : pts) add(p[0], p[1], p[2], jf * p[0] + jb * p[1] + w * p[2], "ok", "matmul");
  add(1e9, 1e9, 1, 1000, "low", "attn");   // would spoil the fit
  add(1e12, 1e9, 1, 1000, "ok", "step");   // double-counts the ops
  const auto j = energy_roofline_json(run, std::string("rapl"), {});
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["host_points"], 5);
  EXPECT_EQ(j["host"]["source"], "rapl");
  EXPECT_NEAR(j["host"]["constant_w"].get<double>(), 2, 1e-6);
  EXPECT_TRUE(energy_roofline_json(run, std::nullopt, {}).is_null());
}

// The ceiling where each row sits: the host fit for rows its source judged,
// the modelled fit for a simulated backend's rows, nothing for the others.
TEST(EnergyFit, CeilingOfARowComesFromTheFitThatSpeaksForIt) {
  flopwatt::Run run;
  const EnergyFit host{1e-11, 1e-10, 2, 0, 0, 0, 0.01, 5}, npu{2e-12, 5e-11, 0.5, 0, 0, 0, 0, 0};
  run.energy_roofline = {{"host", {{"j_per_flop", host.j_per_flop}, {"j_per_byte", host.j_per_byte},
                                   {"constant_w", host.constant_w}, {"source", "rapl"}}},
                         {"modelled", {{"npu:sim-phoenix", {{"j_per_flop", npu.j_per_flop}, {"j_per_byte", npu.j_per_byte},
                                                             {"constant_w", npu.constant_w}}}}}};
  auto row = [](const char* backend, const char* source, std::optional<double> intensity, bool simulated) {
    Measurement m;
    m.backend = backend;
    m.intensity = intensity;
    m.roof_flop_per_s = 1e11;
    m.simulated = simulated;
    m.energy[source].j = 1;
    m.headline_source = source;
    return m;
  };
  const auto cpu = row("cpu:llmc", "rapl", 8.0, false);
  ASSERT_TRUE(energy_ceiling_of(run, cpu));
  EXPECT_DOUBLE_EQ(*energy_ceiling_of(run, cpu), energy_roof_flop_per_j(host, 8.0, 1e11));
  const auto sim = row("npu:sim-phoenix", "npu:sim-phoenix", 8.0, true);
  ASSERT_TRUE(energy_ceiling_of(run, sim));
  EXPECT_DOUBLE_EQ(*energy_ceiling_of(run, sim), energy_roof_flop_per_j(npu, 8.0, 1e11));
  EXPECT_FALSE(energy_ceiling_of(run, row("cpu:llmc", "battery:BAT0", 8.0, false))) << "another source's row";
  EXPECT_FALSE(energy_ceiling_of(run, row("cpu:llmc", "rapl", std::nullopt, false))) << "no intensity";
  EXPECT_FALSE(energy_ceiling_of(run, row("npu:sim-strix", "npu:sim-strix", 8.0, true))) << "no model of it";
  run.energy_roofline = nullptr;
  EXPECT_FALSE(energy_ceiling_of(run, cpu));
}

}  // namespace
}  // namespace flopwatt
