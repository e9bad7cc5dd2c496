#include "harness/runners/gpt2_runner.h"

#include "harness/output/headline_view.h"

#include <fmt/core.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "cpu/core_trip.h"
#include "harness/run/backend_registry.h"
#include "harness/run/statistics.h"
#include "harness/run/timing.h"
#include "harness/runners/grad_order_model.h"
#include "workloads/error.h"
#include "workloads/limits.h"
#include "workloads/gpt2/op_table.h"
#include "workloads/gpt2/tensor_table.h"

namespace flopwatt {

using gpt2::Op;

struct Gpt2Runner::StepRecord {
  int step;
  std::int64_t t0, t1;
  double seconds;  // wall time, with simulated GEMM time in place of the host's simulation time
  float loss;
  double modelled_j;
  std::vector<gpt2::OpRecord> ops;
};

struct Gpt2Runner::OpRow {
  Op op;
  int layer;  // -1: total over layers
  std::vector<double> step_s;
  Breakdown bd;
  bool has_bd = false;
  double modelled_j = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> intervals;
};

namespace {

using StepRecord = Gpt2Runner::StepRecord;
using OpRow = Gpt2Runner::OpRow;

// How per-op energy is attributed; recorded in the context so a reader knows.
constexpr const char* kPerOpEnergyMethod =
    "sum over the op's [t0, t1] intervals of the energy window of each interval; intervals shorter than the "
    "sampling period are interpolated between samples, which amounts to average power x time within a sample "
    "period, and such rows are marked low-confidence";

void validate(const Gpt2Options& a, const gpt2::Config& c) {
  auto positive = [](int v, const char* flag) {
    if (v < 1) throw InputError(std::string(flag) + " " + std::to_string(v), "must be >= 1", "pass a positive count");
  };
  positive(a.batch, "--batch");
  positive(a.seq, "--seq");
  if (a.steps < 1)
    throw InputError("--steps " + std::to_string(a.steps), "must be >= 1",
                     "pass a positive count (--steps 0 only with --save F, which writes the initial parameters)");
  if (a.seq > c.maxT)
    throw InputError("--seq " + std::to_string(a.seq), "longer than the model's maxT=" + std::to_string(c.maxT),
                     "pass --seq <= " + std::to_string(c.maxT));
  const double need = gpt2::training_bytes(c, a.batch, a.seq);
  if (const std::int64_t have = physical_memory_bytes(); have > 0 && need > double(have))
    throw InputError("--batch " + std::to_string(a.batch) + " --seq " + std::to_string(a.seq),
                     "training needs at least " + format_bytes(need) + ", the machine has " + format_bytes(double(have)),
                     "pass a smaller --batch or --seq, or a smaller --model");
  if (a.warmup < 0 || a.warmup >= a.steps)
    throw InputError("--warmup " + std::to_string(a.warmup), "must be >= 0 and below --steps",
                     "the per-op figures need at least one step after warm-up: raise --steps or lower --warmup");
  const auto& o = a.adamw;
  if (!(o.lr > 0 && std::isfinite(o.lr))) throw InputError("--lr", "must be a positive number", "pass e.g. --lr 1e-4");
  if (!(o.beta1 >= 0 && o.beta1 < 1)) throw InputError("--beta1", "must be in [0, 1)", "pass e.g. --beta1 0.9");
  if (!(o.beta2 >= 0 && o.beta2 < 1)) throw InputError("--beta2", "must be in [0, 1)", "pass e.g. --beta2 0.999");
  if (!(o.eps > 0)) throw InputError("--eps", "must be positive", "pass e.g. --eps 1e-8");
  if (!(o.weight_decay >= 0 && std::isfinite(o.weight_decay)))
    throw InputError("--weight-decay", "must be >= 0", "pass e.g. --weight-decay 0.0");
}

std::unique_ptr<Backend> pick_backend(const std::string& name) {
  if (name.empty()) {
    auto b = default_gemm_backend();
    if (!b) throw InputError("--gemm-backend", "no CPU GEMM backend is available", "run `flopwatt backends`");
    return b;
  }
  auto v = select_backends(name, "--gemm-backend");
  if (v.size() != 1)
    throw InputError("--gemm-backend " + name, "names " + std::to_string(v.size()) + " backends; gpt2 runs on one",
                     "pass a single backend name from `flopwatt backends`");
  return std::move(v.front());  // select_backends refused it if it cannot run
}

// Energy of a set of intervals: per source, the sum of the interval windows;
// net from the run's idle baseline; low confidence when the intervals are too
// short for the sampler to resolve.
std::map<std::string, EnergyFigures> interval_energy(EnergyMeter& meter, const Run& run,
                                                     const std::vector<std::pair<std::int64_t, std::int64_t>>& iv,
                                                     double total_flop, double sample_period_s) {
  std::map<std::string, EnergyFigures> out;
  if (iv.empty()) return out;
  std::map<std::string, std::string> why;
  double dt = 0;
  std::vector<double> lens;
  for (const auto& [t0, t1] : iv) {
    dt += double(t1 - t0) * 1e-9;
    lens.push_back(double(t1 - t0) * 1e-9);
    for (auto& [id, f] : meter.window(t0, t1, 0, /*net=*/false)) {
      out[id].j += f.j;
      out[id].gap = out[id].gap || f.gap;
      if (!f.why_low.empty() && why[id].empty()) why[id] = f.why_low;
    }
  }
  const double median_len = quantile(lens, 0.5);
  for (auto& [id, f] : out) {
    f.avg_power_w = dt > 0 ? f.j / dt : 0;
    if (f.j > 0 && total_flop > 0 && !f.gap) f.flop_per_j = total_flop / f.j;
    if (iv.size() > 1 && median_len < 3 * sample_period_s)
      f.why_low = fmt::format("sum of {} intervals of median {:.3g} ms, shorter than 3 sampling periods ({:.3g} ms): "
                              "interpolated, i.e. average power x time within each sample period",
                              iv.size(), median_len * 1e3, sample_period_s * 1e3);
    if (!why[id].empty()) f.why_low += (f.why_low.empty() ? "" : "; ") + why[id];
    // The same noise rule as a single window, over the intervals' total length.
    if (auto it = run.idle.find(id); it != run.idle.end())
      apply_net(f, it->second, dt, total_flop, meter.supply_name(iv.front().first, iv.back().second));
    f.confidence = f.why_low.empty() ? "ok" : "low";
  }
  return out;
}

EnergyFigures modelled_figures(double j, double seconds, double total_flop) {
  EnergyFigures f;
  f.j = j;
  f.avg_power_w = seconds > 0 ? j / seconds : 0;
  if (j > 0 && total_flop > 0) f.flop_per_j = total_flop / j;
  return f;
}

// A step on a simulated GEMM backend: the model's energy covers the GEMMs only,
// so FLOP/J is over the GEMM FLOPs and the row says what is missing.
EnergyFigures modelled_step_figures(double j, double seconds, double gemm_flop) {
  EnergyFigures f = modelled_figures(j, seconds, gemm_flop);
  f.confidence = "low";
  f.why_low = "modelled energy of the step's GEMMs only (FLOP/J over GEMM FLOPs); the CPU's energy for the other "
              "ops is not included";
  return f;
}

// The forward GEMM shape of a linear op (M = B*T, N = OC, K = input channels).
std::optional<Shape> linear_shape(Op op, const gpt2::Config& c, int B, int T) {
  const std::int64_t N = std::int64_t(B) * T, C = c.C;
  switch (op) {
    case Op::QkvFwd: case Op::QkvBwd: return Shape{N, 3 * C, C};
    case Op::AttprojFwd: case Op::AttprojBwd: return Shape{N, C, C};
    case Op::FcFwd: case Op::FcBwd: return Shape{N, 4 * C, C};
    case Op::FcprojFwd: case Op::FcprojBwd: return Shape{N, C, 4 * C};
    case Op::LmHeadFwd: case Op::LmHeadBwd: return Shape{N, c.Vp, C};
    default: return std::nullopt;
  }
}

// Per (op, layer), ordered by the ops' execution order; layer -1 is the total
// over layers (or the op itself outside the layer stack).
std::map<std::pair<int, int>, OpRow> collect_op_rows(const std::vector<const StepRecord*>& measured, bool per_layer) {
  std::map<std::pair<int, int>, OpRow> rows;
  for (std::size_t k = 0; k < measured.size(); ++k) {
    for (const auto& r : measured[k]->ops) {
      auto add = [&](int layer) {
        OpRow& row = rows[{int(r.op), layer}];
        row.op = r.op;
        row.layer = layer;
        if (row.step_s.size() < measured.size()) row.step_s.resize(measured.size(), 0.0);
        row.step_s[k] += r.seconds();
        row.intervals.emplace_back(r.t0_ns, r.t1_ns);
        row.modelled_j += r.modelled_j;
        if (r.has_breakdown) {
          row.has_bd = true;
          row.bd.copy_in += r.breakdown.copy_in;
          row.bd.compute += r.breakdown.compute;
          row.bd.copy_out += r.breakdown.copy_out;
          row.bd.submit += r.breakdown.submit;
          row.bd.reconfigure += r.breakdown.reconfigure;
        }
      };
      add(-1);
      if (per_layer && r.layer >= 0) add(r.layer);
    }
  }
  return rows;
}

// other_s: the step time no op accounts for (timer overhead, glue), median over steps.
void print_table(std::FILE* f, const Run& run, const std::vector<Measurement>& rows, const Measurement& step,
                 double other_s, bool energy) {
  fmt::print(f, "\nPer-op, median over {} steps after warm-up (backend {}, {}, {} threads):\n", step.reps, step.backend,
             step.dtype, step.threads.value_or(0));
  fmt::print(f, "{:<13} {:<4} {:>5} {:>10} {:>7} {:>10} {:>9} {:>8} {:>7} {:>7}{}\n", "op", "pass", "n", "ms/step",
             "share", "GFLOP", "GFLOP/s", "GB/s", "FLOP/B", "%roof", energy ? fmt::format(" {:>9}", "J/step") : "");
  for (const auto& m : rows) {
    std::string e;
    if (energy) {
      // The op's headline as judged for its windows; none, no figure.
      const EnergyFigures* ef = nullptr;
      if (const auto h = headline_of(run, m).source; h && m.energy.count(*h)) ef = &m.energy.at(*h);
      e = ef ? fmt::format(" {:>8.3g}{}", ef->j / std::max(1, m.reps), ef->confidence == "low" ? "?" : " ")
             : fmt::format(" {:>9}", "-");
    }
    // %roof ends with the binding ceiling's initial: "40%m" is 40% of the memory
    // roof; a "!" after it marks a roof exceeded (rows_above_roof).
    const std::string roof =
        m.fraction_of_roof ? fmt::format("{:.0f}%{}{}", 100 * *m.fraction_of_roof,
                                         m.roof_bound ? m.roof_bound->substr(0, 1) : "",
                                         *m.fraction_of_roof > kRoofTolerance ? "!" : "")
                           : "-";
    fmt::print(f, "{:<13} {:<4} {:>5} {:>10.3f} {:>6.1f}% {:>10.4g} {:>9.1f} {:>8.1f} {:>7} {:>7}{}{}\n", m.op,
               m.pass.value_or(""), m.count_per_step.value_or(1), m.time_s.median * 1e3,
               100 * m.time_s.median / step.time_s.median, m.flop * 1e-9,
               m.time_s.median > 0 ? m.flop / m.time_s.median * 1e-9 : 0.0,
               m.bytes && m.time_s.median > 0 ? *m.bytes / m.time_s.median * 1e-9 : 0.0,
               m.intensity ? fmt::format("{:.3g}", *m.intensity) : "-", roof, e, m.simulated ? " [simulated]" : "");
  }
  fmt::print(f, "{:<13} {:<4} {:>5} {:>10.3f} {:>6.1f}%\n", "(other)", "", "", other_s * 1e3,
             100 * other_s / step.time_s.median);
  fmt::print(f, "{:<13} {:<4} {:>5} {:>10.3f} {:>6.1f}% {:>10.4g} {:>9.1f}\n", "step", "", "", step.time_s.median * 1e3,
             100.0, step.flop * 1e-9, step.flop_per_s * 1e-9);
  if (step.roof_time_s && step.fraction_of_roof)
    fmt::print(f, "roofline limit of the step (sum over ops of max(FLOP/peak, bytes/bandwidth, exps/exp rate)): {:.3f} ms, "
                  "{:.1f}% of the measured step\n",
               *step.roof_time_s * 1e3, 100 * *step.fraction_of_roof);
  for (const auto& r : rows_above_roof(rows))
    fmt::print(f, "{}\n", above_roof_warning(r));
}

}  // namespace

Gpt2Runner::Gpt2Runner(const Gpt2Options& o, const gpt2::Config& cfg) : o_(o), cfg_(cfg) {
  validate(o_, cfg_);
  backend_ = pick_backend(o_.gemm_backend);
  if (!o_.data.empty())
    loader_.emplace(gpt2::read_token_file(o_.data, cfg_.V), o_.batch, o_.seq, "--data " + o_.data);
  step_flop_ = gpt2::step_flop(cfg_, o_.batch, o_.seq, o_.dtype);
  for (int i = 0; i < gpt2::kNumOps; ++i) {
    const gpt2::OpCost cost = gpt2::op_cost(Op(i), cfg_, o_.batch, o_.seq, o_.dtype);
    step_bytes_ += gpt2::op_occurrences(Op(i), cfg_) * cost.bytes;
    if (gpt2::op_info(Op(i)).gemm) gemm_flop_ += gpt2::op_occurrences(Op(i), cfg_) * cost.flop;
  }
}

Gpt2Runner::~Gpt2Runner() = default;

void Gpt2Runner::build_model() {
  if (model_) return;
  model_ = std::make_unique<gpt2::Model>(cfg_, *backend_, o_.dtype);
  model_->set_grad_order(o_.grad_order, gpt2::default_block_cache_bytes(o_.sysfs_root));
  if (!o_.checkpoint.empty()) model_->load(o_.checkpoint);
  else model_->init_random(o_.seed);
}

gpt2::Model& Gpt2Runner::model() {
  build_model();
  return *model_;
}

// What each linear layer's backward runs under --grad-order, with the DRAM
// bytes the CPU model expects of either order (workloads/gpt2/grad_order.h).
static nlohmann::json grad_order_layers(const gpt2::Config& c, const Gpt2Options& o) {
  const std::int64_t cache = gpt2::default_block_cache_bytes(o.sysfs_root);
  nlohmann::json j = {{"cache_bytes_for_a_block", cache}};
  for (const auto& l : gpt2::plan_model_backward(c, o.grad_order, std::int64_t(o.batch) * o.seq,
                                                 std::int64_t(dtype_size(o.dtype)), cache))
    j[l.shape.layer] = {{"order", l.plan.interleaved ? "interleaved" : "standard"},
                        {"block_rows", l.plan.block_rows},
                        {"modelled_bytes_standard", l.traffic.standard_bytes},
                        {"modelled_bytes_interleaved", l.traffic.interleaved_bytes}};
  return j;
}

nlohmann::json Gpt2Runner::context() const {
  const int threads = omp_get_max_threads();
  nlohmann::json j = {
      {"model", o_.checkpoint.empty() ? o_.model : "checkpoint"},
      {"config", {{"L", cfg_.L}, {"NH", cfg_.NH}, {"C", cfg_.C}, {"V", cfg_.V}, {"Vp", cfg_.Vp}, {"maxT", cfg_.maxT}}},
      {"parameters", gpt2::num_parameters(cfg_)},
      {"checkpoint", o_.checkpoint.empty() ? nlohmann::json(nullptr) : nlohmann::json(o_.checkpoint)},
      {"data", o_.data.empty() ? nlohmann::json("random tokens, seed " + std::to_string(o_.seed)) : nlohmann::json(o_.data)},
      {"batch", o_.batch},
      {"seq", o_.seq},
      {"steps", o_.steps},
      {"warmup_steps", o_.warmup},
      {"dtype", std::string(to_string(o_.dtype))},
      {"gemm_backend", backend_->name()},
      {"grad_order", gpt2::to_string(o_.grad_order)},
      {"grad_order_layers", grad_order_layers(cfg_, o_)},
      {"non_gemm_ops", "flopwatt CPU kernels (OpenMP, " + std::to_string(threads) + " threads)"},
      {"adamw",
       {{"lr", o_.adamw.lr}, {"beta1", o_.adamw.beta1}, {"beta2", o_.adamw.beta2}, {"eps", o_.adamw.eps},
        {"weight_decay", o_.adamw.weight_decay}}},
      {"step_flop", step_flop_},
      {"step_bytes", step_bytes_},
      {"per_op_energy", kPerOpEnergyMethod},
      {"simulated_gemm_time",
       backend_->simulated() ? "GEMM time is the backend's modelled device time, not host time" : ""}};
  // On a simulated NPU, what the fused backward model makes of the same step (simulated).
  if (auto m = grad_order_npu_model_json(backend_->name(), cfg_, o_.batch, o_.seq)) j["grad_order_npu_model"] = *m;
  return j;
}

// A GPT-2 row's identity: every row of a run on backend b in dtype.
static Measurement gpt2_row(const std::string& op, const std::string& backend, DType dtype) {
  Measurement m;
  m.workload = "gpt2";
  m.op = op;
  m.backend = backend;
  m.dtype = std::string(to_string(dtype));
  m.threads = omp_get_max_threads();
  return m;
}

Measurement Gpt2Runner::base(const std::string& op) const { return gpt2_row(op, backend_->name(), o_.dtype); }

bool Gpt2Runner::run_steps(OpenRun& run, gpt2::Profiler& prof, std::vector<StepRecord>& steps, std::FILE* out) {
  gpt2::Model& model = *model_;
  const int B = o_.batch, T = o_.seq;
  const bool simulated = backend_->simulated();
  EnergyMeter& meter = *run.meter;
  Session& session = *run.session;
  // Slow gauges make each window wait for the next sample: with them, step
  // energies are filled in after the last step instead of after each one.
  const bool defer_energy = meter.slowest_gauge_interval_s() > 0.1;
  std::vector<std::size_t> step_rows;  // indices of the step measurements in the session
  std::vector<int> in, tg;
  bool interrupted = false;
  for (int s = 0; s < o_.steps; ++s) {
    if (g_interrupted.load()) {
      interrupted = true;
      break;
    }
    prof.clear();
    step_now_ = s;
    const std::int64_t adj0 = prof.sim_adjust_ns;
    const double j0 = prof.modelled_j_total;
    const std::int64_t t0 = gpt2::Profiler::now_ns();
    {
      gpt2::OpScope d(&prof, Op::Data, -1);
      if (loader_) loader_->next(in, tg);
      else gpt2::random_batch(o_.seed, s, B, T, cfg_.V, in, tg);
    }
    model.forward(in.data(), tg.data(), B, T);
    model.zero_grad();
    model.backward();
    model.update(o_.adamw, s + 1);
    const std::int64_t t1 = gpt2::Profiler::now_ns();
    // Outside the step's window, so its few ms are in no figure.
    const std::optional<double> trip =
        simulated ? std::nullopt : cpu::core_round_trip_ns(omp_get_max_threads());
    StepRecord rec{s, t0, t1, double(t1 - t0 + prof.sim_adjust_ns - adj0) * 1e-9, model.loss(),
                   prof.modelled_j_total - j0, prof.records()};
    Measurement m = base("step");
    m.step = s;
    m.window_ns = {t0, t1};
    m.reps = 1;
    m.rep_times_s = {rec.seconds};
    m.time_s = summarize(m.rep_times_s);
    m.flop = step_flop_;
    m.bytes = step_bytes_;
    m.flop_per_s = step_flop_ / rec.seconds;
    m.loss = rec.loss;
    m.simulated = simulated;
    m.core_round_trip_ns = trip;
    if (simulated) {
      if (!prof.modelled_source.empty())
        m.energy[prof.modelled_source] = modelled_step_figures(rec.modelled_j, rec.seconds, gemm_flop_);
    } else if (!defer_energy) {
      m.energy = meter.window(t0, t1, step_flop_);
      meter.judge(m, t0, t1);
    }
    session.add_samples(meter.drain_samples());
    session.add(std::move(m));
    step_rows.push_back(session.run().measurements.size() - 1);
    fmt::print(out, "step {:>4}/{}  loss {:.4f}  {:9.1f} ms  {:7.1f} GFLOP/s{}{}\n", s + 1, o_.steps, rec.loss,
               rec.seconds * 1e3, step_flop_ / rec.seconds * 1e-9,
               trip ? fmt::format("  cores {:.0f} ns apart", *trip) : std::string(),
               s < o_.warmup ? "  (warm-up)" : "");
    if (!std::isfinite(rec.loss)) fmt::print(stderr, "warning: loss is {} at step {}\n", rec.loss, s + 1);
    steps.push_back(std::move(rec));
  }
  if (defer_energy && !simulated) {
    for (std::size_t i = 0; i < steps.size(); ++i) {
      Measurement& m = session.run().measurements[step_rows[i]];
      m.energy = meter.window(steps[i].t0, steps[i].t1, step_flop_);
      meter.judge(m, steps[i].t0, steps[i].t1);
    }
    session.save();
  }
  return !interrupted;
}

Measurement Gpt2Runner::op_measurement(const OpRow& row, const gpt2::Profiler& prof, OpenRun& run,
                                       double sample_period_s) const {
  Measurement m = gpt2_op_roof_row(row.op, cfg_, o_.batch, o_.seq, o_.dtype, backend_.get(), row.layer);
  m.reps = int(row.step_s.size());
  m.rep_times_s = row.step_s;
  m.time_s = summarize(row.step_s);
  m.flop_per_s = m.time_s.median > 0 ? m.flop / m.time_s.median : 0;
  if (auto it = op_counts_.find({int(row.op), row.layer}); it != op_counts_.end()) m.counters = it->second;
  if (row.has_bd) {
    const double k = 1.0 / m.reps;
    m.breakdown_s = Breakdown{row.bd.copy_in * k, row.bd.compute * k, row.bd.copy_out * k, row.bd.submit * k,
                              row.bd.reconfigure * k};
  }
  if (m.simulated) {
    if (!prof.modelled_source.empty() && row.modelled_j > 0)
      m.energy[prof.modelled_source] = modelled_figures(row.modelled_j, m.time_s.total, m.flop * m.reps);
  } else {
    m.energy = interval_energy(*run.meter, run.session->run(), row.intervals, m.flop * m.reps, sample_period_s);
  }
  return m;
}

Measurement gpt2_op_roof_row(gpt2::Op op, const gpt2::Config& cfg, int B, int T, DType dtype, const Backend* b,
                             int layer) {
  const gpt2::OpInfo& info = gpt2::op_info(op);
  const gpt2::OpCost cost = gpt2::op_cost(op, cfg, B, T, dtype);
  const int n = layer >= 0 ? std::max(1, info.per_layer) : gpt2::op_occurrences(op, cfg);
  Measurement m = gpt2_row(info.name, b ? b->name() : "host", dtype);
  if (*info.pass) m.pass = std::string(info.pass);
  if (layer >= 0) m.layer = layer;
  m.count_per_step = n;
  m.shape = linear_shape(op, cfg, B, T);
  // A backward op runs two GEMMs (NN and TN): no single layout.
  if (info.gemm && std::string(info.pass) == "fwd") m.layout = "NT";
  m.simulated = info.gemm && b && b->simulated();
  m.flop = n * cost.flop;
  m.bytes = n * cost.bytes;
  if (m.simulated) {
    // The modelled array reads its GEMM operands as bf16 whatever the host hands it.
    m.bytes = n * gpt2::op_cost(op, cfg, B, T, b->compute_dtype(GemmDesc{})).bytes;
  }
  m.working_set_bytes = *m.bytes / n;
  if (cost.exps > 0) m.exps = n * cost.exps;
  if (const char* p = gpt2::memory_pattern(op, dtype)) m.memory_pattern = p;
  // Only the GEMMs take the run's dtype; attention, GELU, LayerNorm and the
  // rest compute on fp32 activations, so a bf16 peak would make their roof twice too high.
  if (!info.gemm) m.roof_peak_dtype = "fp32";
  return m;
}

std::optional<double> gpt2_step_roof_limit(const gpt2::Config& cfg, int B, int T, DType dtype, const Backend& b,
                                           const RooflineSet& roofs) {
  if (b.simulated() || !roofs.host) return std::nullopt;
  std::vector<Measurement> ops;
  for (int i = 0; i < gpt2::kNumOps; ++i) {
    if (gpt2::op_occurrences(gpt2::Op(i), cfg) == 0) continue;
    Measurement m = gpt2_op_roof_row(gpt2::Op(i), cfg, B, T, dtype, &b);
    place_measurement(m, roofs);
    ops.push_back(std::move(m));
  }
  return step_roofline_limit(ops);
}

Measurement Gpt2Runner::steps_measurement(const std::vector<const StepRecord*>& measured, const gpt2::Profiler& prof,
                                          OpenRun& run, double sample_period_s) const {
  Measurement m = base("step");
  m.reps = int(measured.size());
  for (const auto* s : measured) m.rep_times_s.push_back(s->seconds);
  m.time_s = summarize(m.rep_times_s);
  m.flop = step_flop_;
  m.bytes = step_bytes_;
  m.flop_per_s = m.time_s.median > 0 ? step_flop_ / m.time_s.median : 0;
  m.loss = measured.back()->loss;
  m.count_per_step = 1;

  m.simulated = backend_->simulated();
  if (m.simulated) {
    double j = 0;
    for (const auto* s : measured) j += s->modelled_j;
    if (!prof.modelled_source.empty())
      m.energy[prof.modelled_source] = modelled_step_figures(j, m.time_s.total, gemm_flop_ * m.reps);
  } else {
    // The steps' own windows, not one window from the first to the last: the
    // time between steps (writing run.json) is not training.
    std::vector<std::pair<std::int64_t, std::int64_t>> iv;
    for (const auto* s : measured) iv.emplace_back(s->t0, s->t1);
    m.energy = interval_energy(*run.meter, run.session->run(), iv, step_flop_ * m.reps, sample_period_s);
  }
  return m;
}

void Gpt2Runner::count_op(int op, int layer, const std::map<std::string, std::optional<double>>& c) {
  auto add = [&](std::map<std::string, std::optional<double>>& sum) {
    for (const auto& [event, v] : c) {
      auto [it, fresh] = sum.try_emplace(event, v);
      // One uncounted window makes the op's total unknown, not smaller.
      if (!fresh) it->second = it->second && v ? std::optional<double>(*it->second + *v) : std::nullopt;
    }
  };
  add(op_counts_[{op, -1}]);
  if (o_.per_layer && layer >= 0) add(op_counts_[{op, layer}]);
}

bool Gpt2Runner::train(OpenRun& run, double sample_period_s, std::FILE* out) {
  gpt2::Model& model = this->model();
  fmt::print(out, "gpt2 {} ({} parameters), B={} T={}, {} GEMMs on {}{}, {} threads, {:.4g} GFLOP/step\n",
             gpt2::describe(cfg_), model.num_params(), o_.batch, o_.seq, to_string(o_.dtype), backend_->name(),
             backend_->simulated() ? " [simulated]" : "", omp_get_max_threads(), step_flop_ * 1e-9);
  gpt2::Profiler prof;
  model.set_profiler(&prof);
  op_counts_.clear();
  if (o_.counters && o_.counters->active()) {
    prof.on_op_begin = [this] { o_.counters->begin(); };
    prof.on_op_end = [this](Op op, int layer) {
      const auto c = o_.counters->end();
      if (step_now_ >= o_.warmup) count_op(int(op), layer, c);
    };
  }
  std::vector<StepRecord> steps;
  const bool complete = run_steps(run, prof, steps, out);

  // Per-op rows over the steps after warm-up.
  std::vector<const StepRecord*> measured;
  for (const auto& s : steps)
    if (s.step >= o_.warmup) measured.push_back(&s);
  Session& session = *run.session;
  if (!measured.empty()) {
    const auto rows = collect_op_rows(measured, o_.per_layer);
    // Per-op and summary rows span every measured step (no window_ns of
    // their own, which would shade the whole trace in a plot): their supply
    // flag is whether anything changed from the first measured step to the last.
    std::optional<bool> supply_changed;
    std::optional<power::SupplyTrack> track;
    if (run.supply) {
      run.supply->cover(measured.back()->t1);
      track = run.supply->track();
      supply_changed = track->changed_during(measured.front()->t0, measured.back()->t1);
    }
    // Judged over every measured step, from the first to the last (the one rule).
    auto discount = [&](Measurement& m) {
      if (!m.simulated) judge_window(m, *run.meter, track ? &*track : nullptr, measured.front()->t0, measured.back()->t1);
    };
    std::vector<Measurement> table;
    std::vector<double> other(measured.size());  // step time no op accounts for
    for (std::size_t k = 0; k < measured.size(); ++k) other[k] = measured[k]->seconds;
    for (const auto& [key, row] : rows) {
      Measurement m = op_measurement(row, prof, run, sample_period_s);
      m.supply_changed = supply_changed;
      discount(m);
      session.add(std::move(m));
      if (row.layer < 0) {
        for (std::size_t k = 0; k < measured.size(); ++k) other[k] -= row.step_s[k];
        table.push_back(session.run().measurements.back());  // as placed on the roofline
      }
    }
    // The headline: every step after warm-up as one measurement.
    Measurement m = steps_measurement(measured, prof, run, sample_period_s);
    m.supply_changed = supply_changed;
    // Its roof is the sum of its ops' (each at its own ceiling), not one
    // intensity: the step can reach it only if every op reaches its own.
    if (const auto limit = step_roofline_limit(table); limit && !m.simulated && m.time_s.median > 0) {
      m.roof_time_s = *limit;
      m.roof_ceiling = "ops";
      m.roof_bound = "ops";
      m.fraction_of_roof = *limit / m.time_s.median;
      m.roof_flop_per_s = m.flop / *limit;
    }
    discount(m);
    session.add(m);
    print_table(out, session.run(), table, m, quantile(other, 0.5), !m.energy.empty());
    if (const auto& host = session.roofline().host; host && !m.simulated) {
      std::vector<double> trips;
      for (const auto& r : session.run().measurements)
        if (r.op == "step" && r.step && *r.step >= o_.warmup && r.core_round_trip_ns) trips.push_back(*r.core_round_trip_ns);
      if (const auto note = placement_note(*host, trips)) fmt::print(out, "{}\n", *note);
    }
  }
  session.add_samples(run.meter->drain_samples());
  model.set_profiler(nullptr);  // prof ends here; the model may outlive this call (run gpt2 --save)
  return complete;
}

}  // namespace flopwatt
