#include "harness/runners/gemm_runner.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "cpu/backends.h"
#include "harness/run/statistics.h"
#include "power/window_energy.h"
#include "workloads/verify.h"

namespace flopwatt {

namespace {

Backend* find_reference(const std::vector<Backend*>& all, std::unique_ptr<Backend>& owned) {
  for (Backend* b : all)
    if (b->name() == "cpu:reference") return b;
  for (auto& b : cpu::make_backends())
    if (b->name() == "cpu:reference") {
      owned = std::move(b);
      return owned.get();
    }
  return nullptr;
}

}  // namespace

Measurement gemm_row(const GemmShape& shape, const GemmDesc& d, Backend& b) {
  Measurement m;
  m.workload = "gemm";
  m.op = shape.op;
  if (!shape.pass.empty()) m.pass = shape.pass;
  m.backend = b.name();
  m.dtype = std::string(to_string(d.dtype_in));
  m.shape = Shape{d.M, d.N, d.K};
  m.layout = d.layout();
  if (shape.count_per_step) m.count_per_step = shape.count_per_step;
  m.threads = omp_get_max_threads();
  m.simulated = b.simulated();
  m.flop = d.flop();
  // The bytes the backend's memory moves: an NPU reads its operands as bf16
  // whatever the host hands it.
  GemmDesc moved = d;
  moved.dtype_in = b.compute_dtype(d);
  m.bytes = moved.operand_bytes();
  const Availability av = b.availability();
  if (!av.ok) m.skipped = "backend unavailable: " + av.reason;
  else if (!b.supports(d)) m.skipped = "backend does not support " + m.dtype + " " + d.layout();
  return m;
}

namespace {

// Verification on fresh operands against the reference's answer, computed on
// first use and shared by every backend of the shape.
void verify(Measurement& m, Backend& b, Backend* ref, const GemmDesc& d, const GemmOperands& vop,
            std::vector<float>& ref_c) {
  if (!ref) return;
  if (ref_c.empty()) {
    ref_c = vop.c;
    ref->gemm(d, vop.A(d.dtype_in), vop.B(d.dtype_in), ref_c.data());
  }
  if (&b == ref) {
    m.verified = true;  // the oracle itself
    return;
  }
  std::vector<float> c = vop.c;
  b.gemm(d, vop.A(d.dtype_in), vop.B(d.dtype_in), c.data());
  const double err = rel_frobenius_error(c.data(), ref_c.data(), std::size_t(d.M) * d.N);
  m.verify_rel_err = std::isfinite(err) ? err : std::numeric_limits<double>::max();
  m.verified = passes(err, gemm_tolerance(b.compute_dtype(d)));
}

Breakdown mean_after(const std::vector<Breakdown>& bds, int warm) {
  Breakdown avg;
  const double n = double(bds.size() - warm);
  for (std::size_t i = warm; i < bds.size(); ++i) {
    avg.copy_in += bds[i].copy_in / n;
    avg.compute += bds[i].compute / n;
    avg.copy_out += bds[i].copy_out / n;
    avg.submit += bds[i].submit / n;
    avg.reconfigure += bds[i].reconfigure / n;
  }
  return avg;
}

// Times the backend over the rotated operand sets and fills the row's times,
// breakdown and energy. False when interrupted: an unfinished loop is not a
// measurement.
bool time_gemm(Measurement& m, Backend& b, const GemmDesc& d, std::vector<GemmOperands>& sets,
               const TimingOptions& timing, const GemmRunOptions& o, EnergyMeter& meter) {
  const int nsets = int(sets.size());
  for (auto& s : sets) b.prepare(d, s.B(d.dtype_in));
  std::vector<Breakdown> bds;
  std::vector<double> modelled_j;
  TimingOptions bt = timing;
  if (b.simulated()) {  // modelled times are deterministic; the host time is only simulation cost
    bt.min_time_s = 0;
    bt.min_reps = 3;
  }
  // Counted over the timed repetitions only, opened before the loop's first
  // timestamp: a window opened inside the first repetition missed that
  // repetition's start (145 us of it once, on a loaded machine).
  Timed t = time_repeated(
      bt,
      [&](int rep) {
        const int s = rep % nsets;
        b.gemm(d, sets[s].A(d.dtype_in), sets[s].B(d.dtype_in), sets[s].c.data());
        if (auto bd = b.last_breakdown()) bds.push_back(*bd);
        if (auto e = b.last_modelled_energy_j()) modelled_j.push_back(e->second);
      },
      [&] {
        if (o.counters) o.counters->begin();
      });
  if (o.counters) m.counters = o.counters->end();
  if (g_interrupted.load()) return false;
  const int warm = bt.warmup_reps;
  if (b.simulated() && bds.size() == t.rep_s.size() + std::size_t(warm)) {
    // A simulator's host wall time is the cost of simulating, not of the
    // device: its repetitions are the modelled device times.
    for (std::size_t i = 0; i < t.rep_s.size(); ++i) {
      const Breakdown& x = bds[i + warm];
      t.rep_s[i] = x.copy_in + x.compute + x.copy_out + x.submit + x.reconfigure;
    }
  }
  m.reps = int(t.rep_s.size());
  m.rep_times_s = t.rep_s;
  m.window_ns = {t.t0_ns, t.t1_ns};
  m.time_s = summarize(t.rep_s);
  m.flop_per_s = m.time_s.median > 0 ? m.flop / m.time_s.median : 0;
  if (o.peak_flop_per_s && *o.peak_flop_per_s > 0 && !m.simulated) m.fraction_of_peak = m.flop_per_s / *o.peak_flop_per_s;
  if (bds.size() > std::size_t(warm)) m.breakdown_s = mean_after(bds, warm);
  if (!m.simulated) {
    m.energy = meter.window(t.t0_ns, t.t1_ns, m.flop * m.reps);
    meter.judge(m, t.t0_ns, t.t1_ns);  // before the row reaches the console
  }
  if (modelled_j.size() > std::size_t(warm)) {
    double j = 0;
    for (std::size_t i = warm; i < modelled_j.size(); ++i) j += modelled_j[i];
    EnergyFigures f;
    f.j = j;
    f.avg_power_w = m.time_s.total > 0 ? j / m.time_s.total : 0;
    if (j > 0) f.flop_per_j = m.flop * m.reps / j;
    m.energy[b.last_modelled_energy_j()->first] = f;
  }
  return true;
}

}  // namespace

bool run_gemm_suite(const std::vector<Backend*>& backends, const GemmRunOptions& o, Session& session,
                    EnergyMeter& meter, const MeasurementCallback& on_measurement) {
  std::unique_ptr<Backend> owned_ref;
  Backend* ref = find_reference(backends, owned_ref);
  const std::size_t total = o.shapes.size() * backends.size();
  std::size_t done = 0;
  std::mt19937_64 rng(20250403);

  TimingOptions timing = o.timing;
  // Gauges (battery, hwmon averages) update every 1-15 s: lengthen the loop to
  // the span power's rule trusts, unless the user fixed it.
  if (o.lengthen_for_gauges && meter.headline_gauge_interval_s() > 0)
    timing.min_time_s = std::max(timing.min_time_s, power::min_trusted_window_s(meter.headline_gauge_interval_s()));

  for (const GemmShape& shape : o.shapes) {
    GemmDesc d = shape.desc;
    d.dtype_in = o.dtype;
    const GemmOperands vop = make_gemm_operands(d, rng);
    std::vector<float> ref_c;
    // Timing operands, made on first use: a shape that every backend skips allocates none.
    std::vector<GemmOperands> sets;
    for (Backend* b : backends) {
      if (g_interrupted.load()) return false;
      Measurement m = gemm_row(shape, d, *b);
      if (!m.skipped) {
        verify(m, *b, ref, d, vop, ref_c);
        if (sets.empty()) sets = make_rotated_operands(d, rng, o.rotate_bytes, meter.sysfs_root());
        if (!time_gemm(m, *b, d, sets, timing, o, meter)) return false;
        session.add_samples(meter.drain_samples());
      }
      session.add(std::move(m));
      if (on_measurement) on_measurement(session.run().measurements.back(), ++done, total);
    }
  }
  return true;
}

}  // namespace flopwatt
