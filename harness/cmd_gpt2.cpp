// `flopwatt run gpt2`: trains llm.c's GPT-2 for --steps steps and reports one
// measurement per step (op "step", with the loss) and, over the steps after
// warm-up, one measurement per op (and per layer with --per-layer), each with
// analytic FLOPs and bytes, time and energy. Ends with a per-op table.
#include <fmt/core.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

#include "harness/backend_registry.h"
#include "harness/commands.h"
#include "harness/run_setup.h"
#include "harness/statistics.h"
#include "workloads/error.h"
#include "workloads/gpt2/checkpoint.h"
#include "workloads/gpt2/model.h"
#include "workloads/gpt2/op_table.h"
#include "workloads/gpt2/token_data.h"

namespace flopwatt {

namespace {

using gpt2::Op;

struct Gpt2Args {
  RunCommonOptions common;
  std::string model = "d12";
  std::string checkpoint, data, save;
  int batch = 4, seq = 64, steps = 10, warmup = 1;
  std::uint64_t seed = 1337;
  std::string dtype = "fp32";
  std::string gemm_backend;  // empty: the fastest available CPU backend
  gpt2::AdamWConfig adamw;
  bool per_layer = false;
};

// How per-op energy is attributed; recorded in the context so a reader knows.
constexpr const char* kPerOpEnergyMethod =
    "sum over the op's [t0, t1] intervals of the energy window of each interval; intervals shorter than the "
    "sampling period are interpolated between samples, which amounts to average power x time within a sample "
    "period, and such rows are marked low-confidence";

void validate(const Gpt2Args& a, const gpt2::Config& c) {
  auto positive = [](int v, const char* flag) {
    if (v < 1) throw InputError(std::string(flag) + " " + std::to_string(v), "must be >= 1", "pass a positive count");
  };
  positive(a.batch, "--batch");
  positive(a.seq, "--seq");
  positive(a.steps, "--steps");
  if (a.seq > c.maxT)
    throw InputError("--seq " + std::to_string(a.seq), "longer than the model's maxT=" + std::to_string(c.maxT),
                     "pass --seq <= " + std::to_string(c.maxT));
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
  std::unique_ptr<Backend> b;
  if (name.empty()) {
    b = default_gemm_backend();
    if (!b) throw InputError("--gemm-backend", "no CPU GEMM backend is available", "run `flopwatt backends`");
    return b;
  }
  auto v = select_backends(name, "--gemm-backend");
  if (v.size() != 1)
    throw InputError("--gemm-backend " + name, "names " + std::to_string(v.size()) + " backends; gpt2 runs on one",
                     "pass a single backend name from `flopwatt backends`");
  b = std::move(v.front());
  const Availability av = b->availability();
  if (!av.ok)
    throw InputError("--gemm-backend " + name, "unavailable: " + av.reason,
                     // The reason usually carries its own fix already.
                     av.reason.find("fix:") == std::string::npos ? "pick an available backend: `flopwatt backends`"
                                                                 : "");
  return b;
}

struct StepRecord {
  int step;
  std::int64_t t0, t1;
  double seconds;  // wall time, with simulated GEMM time in place of the host's simulation time
  float loss;
  double modelled_j;
  std::vector<gpt2::OpRecord> ops;
};

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
    for (auto& [id, f] : meter.window(t0, t1, 0)) {
      out[id].j += f.j;
      if (!f.why_low.empty() && why[id].empty()) why[id] = f.why_low;
    }
  }
  const double median_len = quantile(lens, 0.5);
  for (auto& [id, f] : out) {
    f.avg_power_w = dt > 0 ? f.j / dt : 0;
    if (f.j > 0 && total_flop > 0) f.flop_per_j = total_flop / f.j;
    if (auto it = run.idle.find(id); it != run.idle.end()) {
      const double net = std::max(0.0, f.j - it->second.power_w * dt);
      f.net_j = net;
      if (net > 0 && total_flop > 0) f.flop_per_j_net = total_flop / net;
    }
    if (iv.size() > 1 && median_len < 3 * sample_period_s)
      f.why_low = fmt::format("sum of {} intervals of median {:.3g} ms, shorter than 3 sampling periods ({:.3g} ms): "
                              "interpolated, i.e. average power x time within each sample period",
                              iv.size(), median_len * 1e3, sample_period_s * 1e3);
    if (!why[id].empty()) f.why_low += (f.why_low.empty() ? "" : "; ") + why[id];
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

struct OpRow {
  Op op;
  int layer;  // -1: total over layers
  std::vector<double> step_s;
  Breakdown bd;
  bool has_bd = false;
  double modelled_j = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> intervals;
};

// other_s: the step time no op accounts for (timer overhead, glue), median over steps.
void print_table(std::FILE* f, const std::vector<Measurement>& rows, const Measurement& step, double other_s,
                 bool energy, const std::optional<std::string>& headline) {
  fmt::print(f, "\nPer-op, median over {} steps after warm-up (backend {}, {}, {} threads):\n", step.reps, step.backend,
             step.dtype, step.threads.value_or(0));
  fmt::print(f, "{:<13} {:<4} {:>5} {:>10} {:>7} {:>10} {:>9} {:>8}{}\n", "op", "pass", "n", "ms/step", "share",
             "GFLOP", "GFLOP/s", "GB/s", energy ? fmt::format(" {:>9}", "J/step") : "");
  for (const auto& m : rows) {
    std::string e;
    if (energy) {
      const EnergyFigures* ef = nullptr;
      if (headline && m.energy.count(*headline)) ef = &m.energy.at(*headline);
      else if (!m.energy.empty()) ef = &m.energy.begin()->second;
      e = ef ? fmt::format(" {:>8.3g}{}", ef->j / std::max(1, m.reps), ef->confidence == "low" ? "?" : " ")
             : fmt::format(" {:>9}", "-");
    }
    fmt::print(f, "{:<13} {:<4} {:>5} {:>10.3f} {:>6.1f}% {:>10.4g} {:>9.1f} {:>8.1f}{}{}\n", m.op, m.pass.value_or(""),
               m.count_per_step.value_or(1), m.time_s.median * 1e3, 100 * m.time_s.median / step.time_s.median,
               m.flop * 1e-9, m.time_s.median > 0 ? m.flop / m.time_s.median * 1e-9 : 0.0,
               m.bytes && m.time_s.median > 0 ? *m.bytes / m.time_s.median * 1e-9 : 0.0, e,
               m.simulated ? " [simulated]" : "");
  }
  fmt::print(f, "{:<13} {:<4} {:>5} {:>10.3f} {:>6.1f}%\n", "(other)", "", "", other_s * 1e3,
             100 * other_s / step.time_s.median);
  fmt::print(f, "{:<13} {:<4} {:>5} {:>10.3f} {:>6.1f}% {:>10.4g} {:>9.1f}\n", "step", "", "", step.time_s.median * 1e3,
             100.0, step.flop * 1e-9, step.flop_per_s * 1e-9);
}

int run_gpt2(CLI::App* cmd, Gpt2Args& a) {
  finalize_run_common_options(cmd, a.common);
  const auto dt = parse_dtype(a.dtype);
  if (!dt) throw InputError("--dtype " + a.dtype, "unknown dtype", "use fp32 or bf16");
  if (cmd->count("--warmup") == 0 && a.steps == 1) a.warmup = 0;

  gpt2::Config cfg;
  if (!a.checkpoint.empty()) {
    cfg = gpt2::read_checkpoint_config(a.checkpoint);
    if (cmd->count("--model") && !(gpt2::preset(a.model) == cfg))
      throw InputError("--model " + a.model, "does not match --checkpoint " + a.checkpoint + " (" +
                                                 gpt2::describe(cfg) + ")",
                       "drop --model; the checkpoint defines the model");
  } else {
    cfg = gpt2::preset(a.model);
  }
  validate(a, cfg);
  auto backend = pick_backend(a.gemm_backend);
  std::optional<gpt2::BatchLoader> loader;
  if (!a.data.empty()) loader.emplace(gpt2::read_token_file(a.data, cfg.V), a.batch, a.seq, "--data " + a.data);

  gpt2::Model model(cfg, *backend, *dt);
  if (!a.checkpoint.empty()) model.load(a.checkpoint);
  else model.init_random(a.seed);

  const int B = a.batch, T = a.seq;
  const double step_flop = gpt2::step_flop(cfg, B, T, *dt);
  double step_bytes = 0, gemm_flop = 0;
  for (int i = 0; i < gpt2::kNumOps; ++i) {
    const gpt2::OpCost cost = gpt2::op_cost(Op(i), cfg, B, T, *dt);
    step_bytes += gpt2::op_occurrences(Op(i), cfg) * cost.bytes;
    if (gpt2::op_info(Op(i)).gemm) gemm_flop += gpt2::op_occurrences(Op(i), cfg) * cost.flop;
  }
  const bool simulated = backend->simulated();
  const int threads = omp_get_max_threads();

  nlohmann::json extra = {
      {"command", "run gpt2"},
      {"gpt2",
       {{"model", a.checkpoint.empty() ? a.model : "checkpoint"},
        {"config", {{"L", cfg.L}, {"NH", cfg.NH}, {"C", cfg.C}, {"V", cfg.V}, {"Vp", cfg.Vp}, {"maxT", cfg.maxT}}},
        {"parameters", model.num_params()},
        {"checkpoint", a.checkpoint.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.checkpoint)},
        {"data", a.data.empty() ? nlohmann::json("random tokens, seed " + std::to_string(a.seed)) : nlohmann::json(a.data)},
        {"batch", B},
        {"seq", T},
        {"steps", a.steps},
        {"warmup_steps", a.warmup},
        {"dtype", a.dtype},
        {"gemm_backend", backend->name()},
        {"non_gemm_ops", "flopwatt CPU kernels (OpenMP, " + std::to_string(threads) + " threads)"},
        {"adamw",
         {{"lr", a.adamw.lr}, {"beta1", a.adamw.beta1}, {"beta2", a.adamw.beta2}, {"eps", a.adamw.eps},
          {"weight_decay", a.adamw.weight_decay}}},
        {"step_flop", step_flop},
        {"step_bytes", step_bytes},
        {"per_op_energy", kPerOpEnergyMethod},
        {"simulated_gemm_time", simulated ? "GEMM time is the backend's modelled device time, not host time" : ""}}}};
  std::FILE* out = stdout;
  OpenRun r = start_run(a.common, {backend.get()}, extra, out);
  EnergyMeter& meter = *r.meter;
  Session& session = *r.session;
  const auto headline = session.run().headline_source;
  // Slow gauges make each window wait for the next sample: with them, step
  // energies are filled in after the last step instead of after each one.
  const bool defer_energy = meter.slowest_gauge_interval_s() > 0.1;
  fmt::print(out, "gpt2 {} ({} parameters), B={} T={}, {} GEMMs on {}{}, {} threads, {:.4g} GFLOP/step\n",
             gpt2::describe(cfg), model.num_params(), B, T, a.dtype, backend->name(), simulated ? " [simulated]" : "",
             threads, step_flop * 1e-9);

  auto base = [&](const std::string& op) {
    Measurement m;
    m.workload = "gpt2";
    m.op = op;
    m.backend = backend->name();
    m.dtype = a.dtype;
    m.threads = threads;
    return m;
  };

  gpt2::Profiler prof;
  model.set_profiler(&prof);
  std::vector<StepRecord> steps;
  std::vector<std::size_t> step_rows;  // indices of the step measurements in the session
  std::vector<int> in, tg;
  bool interrupted = false;
  for (int s = 0; s < a.steps; ++s) {
    if (g_interrupted.load()) {
      interrupted = true;
      break;
    }
    prof.clear();
    const std::int64_t adj0 = prof.sim_adjust_ns;
    const double j0 = prof.modelled_j_total;
    const std::int64_t t0 = gpt2::Profiler::now_ns();
    {
      gpt2::OpScope d(&prof, Op::Data, -1);
      if (loader) loader->next(in, tg);
      else gpt2::random_batch(a.seed, s, B, T, cfg.V, in, tg);
    }
    model.forward(in.data(), tg.data(), B, T);
    model.zero_grad();
    model.backward();
    model.update(a.adamw, s + 1);
    const std::int64_t t1 = gpt2::Profiler::now_ns();
    StepRecord rec{s, t0, t1, double(t1 - t0 + prof.sim_adjust_ns - adj0) * 1e-9, model.loss(),
                   prof.modelled_j_total - j0, prof.records()};
    Measurement m = base("step");
    m.step = s;
    m.reps = 1;
    m.rep_times_s = {rec.seconds};
    m.time_s = summarize(m.rep_times_s);
    m.flop = step_flop;
    m.bytes = step_bytes;
    m.flop_per_s = step_flop / rec.seconds;
    m.loss = rec.loss;
    m.simulated = simulated;
    if (simulated) {
      if (!prof.modelled_source.empty())
        m.energy[prof.modelled_source] = modelled_step_figures(rec.modelled_j, rec.seconds, gemm_flop);
    } else if (!defer_energy) {
      m.energy = meter.window(t0, t1, step_flop);
    }
    session.add_samples(meter.drain_samples());
    session.add(std::move(m));
    step_rows.push_back(session.run().measurements.size() - 1);
    fmt::print(out, "step {:>4}/{}  loss {:.4f}  {:9.1f} ms  {:7.1f} GFLOP/s{}\n", s + 1, a.steps, rec.loss,
               rec.seconds * 1e3, step_flop / rec.seconds * 1e-9, s < a.warmup ? "  (warm-up)" : "");
    if (!std::isfinite(rec.loss)) fmt::print(stderr, "warning: loss is {} at step {}\n", rec.loss, s + 1);
    steps.push_back(std::move(rec));
  }
  if (defer_energy && !simulated) {
    for (std::size_t i = 0; i < steps.size(); ++i)
      session.run().measurements[step_rows[i]].energy = meter.window(steps[i].t0, steps[i].t1, step_flop);
    session.save();
  }

  // Per-op rows over the steps after warm-up.
  std::vector<const StepRecord*> measured;
  for (const auto& s : steps)
    if (s.step >= a.warmup) measured.push_back(&s);
  std::vector<Measurement> table;
  if (!measured.empty()) {
    std::map<std::pair<int, int>, OpRow> rows;  // (op, layer) -> row, ordered by execution order of ops
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
        add(-1);  // the total over layers (or the op itself outside the layer stack)
        if (a.per_layer && r.layer >= 0) add(r.layer);
      }
    }
    const double sample_period = a.common.power.sample_period_s;
    for (auto& [key, row] : rows) {
      const gpt2::OpInfo& info = gpt2::op_info(row.op);
      const gpt2::OpCost cost = gpt2::op_cost(row.op, cfg, B, T, *dt);
      const int n = row.layer >= 0 ? std::max(1, info.per_layer) : gpt2::op_occurrences(row.op, cfg);
      Measurement m = base(info.name);
      if (*info.pass) m.pass = std::string(info.pass);
      if (row.layer >= 0) m.layer = row.layer;
      m.count_per_step = n;
      m.shape = linear_shape(row.op, cfg, B, T);
      // A backward op runs two GEMMs (NN and TN): no single layout.
      if (info.gemm && std::string(info.pass) == "fwd") m.layout = "NT";
      m.simulated = info.gemm && simulated;
      m.reps = int(measured.size());
      m.rep_times_s = row.step_s;
      m.time_s = summarize(row.step_s);
      m.flop = n * cost.flop;
      m.bytes = n * cost.bytes;
      m.flop_per_s = m.time_s.median > 0 ? m.flop / m.time_s.median : 0;
      if (row.has_bd) {
        const double k = 1.0 / m.reps;
        m.breakdown_s = Breakdown{row.bd.copy_in * k, row.bd.compute * k, row.bd.copy_out * k, row.bd.submit * k,
                                  row.bd.reconfigure * k};
      }
      if (m.simulated) {
        if (!prof.modelled_source.empty() && row.modelled_j > 0)
          m.energy[prof.modelled_source] = modelled_figures(row.modelled_j, m.time_s.total, m.flop * m.reps);
      } else {
        m.energy = interval_energy(meter, session.run(), row.intervals, m.flop * m.reps, sample_period);
      }
      if (row.layer < 0) table.push_back(m);
      session.add(std::move(m));
    }
    // The headline: every step after warm-up as one measurement.
    Measurement m = base("step");
    m.reps = int(measured.size());
    for (const auto* s : measured) m.rep_times_s.push_back(s->seconds);
    m.time_s = summarize(m.rep_times_s);
    m.flop = step_flop;
    m.bytes = step_bytes;
    m.flop_per_s = m.time_s.median > 0 ? step_flop / m.time_s.median : 0;
    m.loss = measured.back()->loss;
    m.count_per_step = 1;
    m.simulated = simulated;
    if (simulated) {
      double j = 0;
      for (const auto* s : measured) j += s->modelled_j;
      if (!prof.modelled_source.empty())
        m.energy[prof.modelled_source] = modelled_step_figures(j, m.time_s.total, gemm_flop * m.reps);
    } else {
      // The steps' own windows, not one window from the first to the last: the
      // time between steps (writing run.json) is not training.
      std::vector<std::pair<std::int64_t, std::int64_t>> iv;
      for (const auto* s : measured) iv.emplace_back(s->t0, s->t1);
      m.energy = interval_energy(meter, session.run(), iv, step_flop * m.reps, sample_period);
    }
    session.add(m);
    std::vector<double> other;
    for (std::size_t k = 0; k < measured.size(); ++k) {
      double ops = 0;
      for (const auto& [key, row] : rows)
        if (row.layer < 0) ops += row.step_s[k];
      other.push_back(measured[k]->seconds - ops);
    }
    print_table(out, table, m, quantile(other, 0.5), !m.energy.empty(), headline);
  }
  session.add_samples(meter.drain_samples());
  if (!a.save.empty()) {
    model.save(a.save, "--save");
    fmt::print(out, "saved checkpoint {}\n", a.save);
  }
  return end_run(r, !interrupted, out, RunEnding::kReportPath);
}

}  // namespace

void register_run_gpt2(CLI::App& run, CliState& st) {
  auto* cmd = run.add_subcommand("gpt2", "Train llm.c's GPT-2 and measure every op (FLOP/s, FLOP/J)");
  auto a = std::make_shared<Gpt2Args>();
  cmd->add_option("--model", a->model, "Preset: tiny | d12 (124M) | d24 | d36 | d48 (default d12)");
  cmd->add_option("--checkpoint", a->checkpoint, "llm.c checkpoint (.bin, version 3) to start from (default: random init)");
  cmd->add_option("--data", a->data, "llm.c token file (.bin); batches are taken in order and wrap (default: random tokens)");
  cmd->add_option("--batch", a->batch, "Batch size B (default 4)");
  cmd->add_option("--seq", a->seq, "Sequence length T (default 64)");
  cmd->add_option("--steps", a->steps, "Training steps (default 10)");
  cmd->add_option("--warmup", a->warmup, "Steps left out of the per-op figures (default 1)");
  cmd->add_option("--lr", a->adamw.lr, "AdamW learning rate (default 1e-4)");
  cmd->add_option("--beta1", a->adamw.beta1, "AdamW beta1 (default 0.9)");
  cmd->add_option("--beta2", a->adamw.beta2, "AdamW beta2 (default 0.999)");
  cmd->add_option("--eps", a->adamw.eps, "AdamW epsilon (default 1e-8)");
  cmd->add_option("--weight-decay", a->adamw.weight_decay, "AdamW weight decay (default 0)");
  cmd->add_option("--dtype", a->dtype, "GEMM operands: fp32 | bf16 (bf16: fp32 master weights and accumulation)");
  cmd->add_option("--gemm-backend", a->gemm_backend, "Backend for every GEMM (default: fastest available CPU backend)");
  cmd->add_option("--save", a->save, "Write the trained parameters as an llm.c checkpoint");
  cmd->add_option("--seed", a->seed, "Seed of the random init and random tokens (default 1337)");
  cmd->add_flag("--per-layer", a->per_layer, "Also report every op of every layer");
  add_run_common_options(cmd, a->common);
  cmd->callback([cmd, a, &st] { st.exit_code = run_gpt2(cmd, *a); });
}

}  // namespace flopwatt
