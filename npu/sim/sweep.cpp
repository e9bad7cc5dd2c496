#include "npu/sim/sweep.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "workloads/error.h"

namespace flopwatt::npu {

namespace {

HostSide host_for(const DeviceDesc& dev, const GemmDesc& d, const SweepOptions& o) {
  return {o.host_in, d.beta != 0.0f, o.host_copy_bytes_per_s > 0 ? o.host_copy_bytes_per_s : dev.host_copy_bytes_per_s};
}

std::string base_op(const std::string& op) {
  for (const char* suffix : {"_dinp", "_dweight"}) {
    const std::string s(suffix);
    if (op.size() > s.size() && op.compare(op.size() - s.size(), s.size(), s) == 0) return op.substr(0, op.size() - s.size());
  }
  return op;
}

bool ends_with(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

}  // namespace

std::vector<SweepRow> sweep_shapes(const DeviceDesc& dev, const std::vector<GemmShape>& shapes, const SweepOptions& o) {
  std::vector<SweepRow> rows;
  rows.reserve(shapes.size());
  for (const auto& s : shapes) {
    SweepRow r;
    r.device = dev.name;
    r.op = s.op;
    r.pass = s.pass;
    r.desc = s.desc;
    r.count_per_step = s.count_per_step;
    r.plan = best_plan(dev, {s.desc.M, s.desc.N, s.desc.K, o.out});
    r.timing = model_time(dev, r.plan, host_for(dev, s.desc, o), 0.0);
    r.energy = model_energy(dev, r.plan, r.timing);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<const GemmShape*> step_sequence(const std::vector<GemmShape>& shapes) {
  int L = 0;
  for (const auto& s : shapes) L = std::max(L, s.count_per_step);
  std::vector<const GemmShape*> seq, per_layer_fwd, single_fwd, others;
  std::vector<std::string> per_layer_bwd_ops, single_bwd_ops;
  std::map<std::string, const GemmShape*> dinp, dweight;
  for (const auto& s : shapes) {
    const bool per_layer = L > 1 && s.count_per_step == L;
    const bool single = s.count_per_step == 1;
    if (s.pass == "fwd" && (per_layer || single)) {
      (per_layer ? per_layer_fwd : single_fwd).push_back(&s);
    } else if (s.pass == "bwd" && (per_layer || single) && (ends_with(s.op, "_dinp") || ends_with(s.op, "_dweight"))) {
      const std::string b = base_op(s.op);
      auto& ops = per_layer ? per_layer_bwd_ops : single_bwd_ops;
      if (std::find(ops.begin(), ops.end(), b) == ops.end()) ops.push_back(b);
      (ends_with(s.op, "_dinp") ? dinp : dweight)[b] = &s;
    } else {
      others.push_back(&s);
    }
  }
  auto push_bwd = [&](const std::string& b) {
    if (dinp.count(b)) seq.push_back(dinp[b]);
    if (dweight.count(b)) seq.push_back(dweight[b]);
  };
  for (int l = 0; l < L; ++l)
    for (auto* s : per_layer_fwd) seq.push_back(s);
  for (auto* s : single_fwd) seq.push_back(s);
  for (auto it = single_bwd_ops.rbegin(); it != single_bwd_ops.rend(); ++it) push_bwd(*it);
  for (int l = 0; l < L; ++l)
    for (auto it = per_layer_bwd_ops.rbegin(); it != per_layer_bwd_ops.rend(); ++it) push_bwd(*it);
  for (auto* s : others)
    for (int c = 0; c < std::max(1, s->count_per_step); ++c) seq.push_back(s);
  return seq;
}

StepComparison compare_step(const DeviceDesc& dev, const std::vector<GemmShape>& shapes, const SweepOptions& o) {
  StepComparison cmp;
  cmp.device = dev.name;
  const auto seq = step_sequence(shapes);
  for (auto* s : seq) cmp.flop += s->desc.flop();

  std::map<const GemmShape*, Plan> own;
  for (const auto& s : shapes) own.emplace(&s, best_plan(dev, {s.desc.M, s.desc.N, s.desc.K, o.out}));
  const HostSide h0 = host_for(dev, GemmDesc{}, o);
  cmp.single = choose_single_design(dev, shapes, o.out, h0);
  std::map<const GemmShape*, Plan> shared;
  for (const auto& s : shapes) shared.emplace(&s, plan_single(dev, {s.desc.M, s.desc.N, s.desc.K, o.out}, cmp.single));

  auto run = [&](const std::string& name, const std::map<const GemmShape*, Plan>& plans, Reconfig how, int contexts) {
    StrategyResult r;
    r.name = name;
    DeviceDesc d = dev;
    d.hwctx_limit = contexts;
    DesignResidency res(d, how);
    std::map<std::string, int> keys;
    // Two steps; the second is the steady state a training run sees.
    for (int pass = 0; pass < 2; ++pass) {
      const int switches0 = res.switches();
      for (auto* s : seq) {
        const Plan& pl = plans.at(s);
        const double reconf = res.switch_to(pl.design_key());
        if (pass == 0) continue;
        keys[pl.design_key()]++;
        const SimTiming t = model_time(dev, pl, host_for(dev, s->desc, o), reconf);
        r.time_s += t.total();
        r.reconfigure_s += t.reconfigure;
        r.copy_s += t.copy_in + t.copy_out;
        r.device_s += t.device;
        r.submit_s += t.submit;
        r.energy_j += model_energy(dev, pl, t).j;
        r.macs_issued += pl.macs_issued();
        r.macs_useful += pl.macs_useful();
        r.commands += int(pl.commands);
      }
      if (pass == 1) r.switches = res.switches() - switches0;
    }
    r.designs = int(keys.size());
    return r;
  };
  cmp.strategies.push_back(run("per-shape designs, load_pdi in one context", own, Reconfig::LoadPdi, 1));
  cmp.strategies.push_back(run(fmt::format("per-shape designs, <= {} resident contexts", dev.hwctx_limit), own,
                               Reconfig::Xclbin, dev.hwctx_limit));
  cmp.strategies.push_back(run("per-shape designs, new xclbin+context each", own, Reconfig::Xclbin, 1));
  cmp.strategies.push_back(run("one design for all shapes (padded)", shared, Reconfig::LoadPdi, 1));
  return cmp;
}

std::vector<GemmShape> random_shapes(int n, unsigned seed) {
  if (n <= 0) throw InputError("--shapes", "random:N needs N >= 1");
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(std::log(16.0), std::log(4096.0));
  std::vector<GemmShape> v;
  v.reserve(std::size_t(n));
  for (int i = 0; i < n; ++i) {
    GemmDesc d;
    d.M = std::llround(std::exp(u(rng)));
    d.N = std::llround(std::exp(u(rng)));
    d.K = std::llround(std::exp(u(rng)));
    v.push_back({fmt::format("{}x{}x{}", d.M, d.N, d.K), "", d, 0});
  }
  return v;
}

std::string format_sweep(const std::vector<SweepRow>& rows) {
  std::string s = fmt::format("{:<8} {:<16} {:>6} {:>6} {:>6}  {:<12} {:>3} {:<8} {:>9} {:>5} {:>5} {:>5} {:>5} {:>6} {:>8} {:>9}\n",
                              "device", "op", "M", "N", "K", "tile mxkxn", "col", "bound", "time ms", "copy%",
                              "dma%", "comp%", "subm%", "xfer%", "TFLOP/s", "GFLOP/J");
  for (const auto& r : rows) {
    const SimTiming& t = r.timing;
    const double tot = t.total();
    auto pct = [&](double x) { return tot > 0 ? 100.0 * x / tot : 0.0; };
    s += fmt::format("{:<8} {:<16} {:>6} {:>6} {:>6}  {:<12} {:>3} {:<8} {:>9.3f} {:>5.1f} {:>5.1f} {:>5.1f} {:>5.1f} {:>6.1f} {:>8.3f} {:>9.1f}\n",
                     r.device, r.op.size() > 16 ? r.op.substr(0, 16) : r.op, r.desc.M, r.desc.N, r.desc.K,
                     fmt::format("{}x{}x{}", r.plan.tile.m, r.plan.tile.k, r.plan.tile.n), r.plan.cols, t.bound,
                     tot * 1e3, pct(t.copy_in + t.copy_out), pct(t.device - t.compute_only), pct(t.compute_only),
                     pct(t.submit), 100.0 * r.transfer_share(), tot > 0 ? r.flop() / tot / 1e12 : 0.0,
                     r.energy.j > 0 ? r.flop() / r.energy.j / 1e9 : 0.0);
  }
  s += "copy% = host copies in/out; dma% = device transfers not hidden behind compute; comp% = core kernels;\n"
       "subm% = command latency; xfer% = copy% + dma% (explicit data movement)\n";
  return s;
}

std::string format_comparison(const StepComparison& c) {
  std::string s = fmt::format("{}: one training step's GEMMs ({:.2f} GFLOP); single design m={} k={} n={} on {} cols, K per command {}\n",
                              c.device, c.flop / 1e9, c.single.tile.m, c.single.tile.k, c.single.tile.n, c.single.cols,
                              c.single.k_chunk);
  s += fmt::format("  {:<44} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>6} {:>7} {:>8} {:>8}\n", "strategy", "step ms",
                   "reconf ms", "copy ms", "dev ms", "subm ms", "pad %", "switch", "designs", "TFLOP/s", "J");
  for (const auto& r : c.strategies)
    s += fmt::format("  {:<44} {:>9.2f} {:>9.2f} {:>8.2f} {:>8.2f} {:>8.2f} {:>8.1f} {:>6} {:>7} {:>8.3f} {:>8.3f}\n",
                     r.name, r.time_s * 1e3, r.reconfigure_s * 1e3, r.copy_s * 1e3, r.device_s * 1e3, r.submit_s * 1e3,
                     r.macs_useful > 0 ? 100.0 * (r.macs_issued / r.macs_useful - 1) : 0.0, r.switches, r.designs,
                     r.time_s > 0 ? c.flop / r.time_s / 1e12 : 0.0, r.energy_j);
  return s;
}

nlohmann::json sweep_to_json(const std::vector<SweepRow>& rows, const std::vector<StepComparison>& cmp) {
  nlohmann::json jr = nlohmann::json::array();
  for (const auto& r : rows) {
    const SimTiming& t = r.timing;
    jr.push_back({{"device", r.device}, {"op", r.op}, {"pass", r.pass},
                  {"shape", {{"M", r.desc.M}, {"N", r.desc.N}, {"K", r.desc.K}}}, {"count_per_step", r.count_per_step},
                  {"plan", r.plan.to_json()},
                  {"time_s", {{"total", t.total()}, {"copy_in", t.copy_in}, {"device", t.device},
                              {"compute_only", t.compute_only}, {"copy_out", t.copy_out}, {"submit", t.submit},
                              {"reconfigure", t.reconfigure}, {"peak_bound", t.peak_bound}}},
                  {"bound", t.bound}, {"transfer_share", r.transfer_share()}, {"compute_share", r.compute_share()},
                  {"flop", r.flop()}, {"flop_per_s", t.total() > 0 ? r.flop() / t.total() : 0.0},
                  {"energy_j", {{"total", r.energy.j}, {"static", r.energy.static_j}, {"mac", r.energy.mac_j},
                                {"ddr", r.energy.ddr_j}, {"l2", r.energy.l2_j}, {"l1", r.energy.l1_j}}},
                  {"simulated", true}});
  }
  nlohmann::json jc = nlohmann::json::array();
  for (const auto& c : cmp) {
    nlohmann::json st = nlohmann::json::array();
    for (const auto& r : c.strategies)
      st.push_back({{"name", r.name}, {"time_s", r.time_s}, {"reconfigure_s", r.reconfigure_s}, {"copy_s", r.copy_s},
                    {"device_s", r.device_s}, {"submit_s", r.submit_s}, {"energy_j", r.energy_j},
                    {"macs_issued", r.macs_issued}, {"macs_useful", r.macs_useful}, {"switches", r.switches},
                    {"commands", r.commands}, {"designs", r.designs}});
    jc.push_back({{"device", c.device}, {"flop", c.flop},
                  {"single_design", {{"m", c.single.tile.m}, {"k", c.single.tile.k}, {"n", c.single.tile.n},
                                     {"cols", c.single.cols}, {"k_chunk", c.single.k_chunk}}},
                  {"strategies", st}});
  }
  return {{"simulated", true}, {"shapes", jr}, {"step_comparison", jc}};
}

std::string sweep_to_csv(const std::vector<SweepRow>& rows) {
  std::string s = "device,op,pass,M,N,K,m,k,n,cols,bound,time_s,copy_in_s,device_s,compute_only_s,copy_out_s,submit_s,"
                  "transfer_share,flop_per_s,energy_j\n";
  for (const auto& r : rows) {
    const SimTiming& t = r.timing;
    s += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.6f},{:.6g},{:.9g}\n",
                     r.device, r.op, r.pass, r.desc.M, r.desc.N, r.desc.K, r.plan.tile.m, r.plan.tile.k, r.plan.tile.n,
                     r.plan.cols, t.bound, t.total(), t.copy_in, t.device, t.compute_only, t.copy_out, t.submit,
                     r.transfer_share(), t.total() > 0 ? r.flop() / t.total() : 0.0, r.energy.j);
  }
  return s;
}

}  // namespace flopwatt::npu
