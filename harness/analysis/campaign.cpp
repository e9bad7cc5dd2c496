#include "harness/analysis/campaign.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "harness/output/csv_writer.h"
#include "harness/output/metrics.h"
#include "harness/output/text.h"
#include "power/power_state.h"
#include "workloads/error.h"

namespace flopwatt {

using nlohmann::json;

namespace {


std::optional<double> fpj(const Measurement& m, const std::optional<std::string>& src) {
  if (!src) return std::nullopt;
  auto it = m.energy.find(*src);
  return it == m.energy.end() ? std::nullopt : it->second.flop_per_j;
}

// The gemm suites time every available backend but the naive oracle: `run gemm`
// verifies against it anyway, and its minutes would dominate the phase.
std::string gemm_backends(const SuiteSpec& s) {
  if (!s.backends.empty()) return s.backends;
  std::vector<std::string> v;
  for (const auto& b : s.backend_list)
    if (b.available && b.name != "cpu:reference") v.push_back(b.name);
  if (v.empty()) throw InputError("--suite " + s.suite, "no GEMM backend is available", "run `flopwatt backends`");
  return join(v, ",");
}

std::vector<std::string> gpt2_args(const SuiteSpec& s, const std::string& model, int steps, const std::string& gemm) {
  std::vector<std::string> a = {"run", "gpt2", "--model", s.gpt2_model.empty() ? model : s.gpt2_model,
                                "--batch", "4", "--seq", "64",
                                "--steps", std::to_string(s.gpt2_steps > 0 ? s.gpt2_steps : steps), "--warmup", "1"};
  if (!gemm.empty()) a.insert(a.end(), {"--gemm-backend", gemm});
  return a;
}

// One side (mains or battery) of one row.
struct Side {
  const Measurement* m = nullptr;
  const LoadedRun* run = nullptr;
  std::optional<std::string> source;  // the energy source its FLOP/J is read from
};

struct CRow {
  std::string key, backend;
  const Measurement* first = nullptr;
  Side side[2];  // 0 mains, 1 battery
};

const char* const kStates[2] = {"mains", "battery"};

json side_json(const Side& s) {
  if (!s.m) return nullptr;
  const Measurement& m = *s.m;
  json j = {{"run", s.run->label},
            {"flop_per_s", m.flop_per_s},
            {"flop_per_s_p10", rate_at(m, m.time_s.p90)},
            {"flop_per_s_p90", rate_at(m, m.time_s.p10)},
            {"reps", m.reps},
            {"energy_source", json_or_null(s.source)},
            {"energy_domain", s.source ? json(source_domain(s.run->run, *s.source)) : json(nullptr)},
            {"flop_per_j", json_or_null(fpj(m, s.source))}};
  json_set(j, metric::kTimeMedian.name, m.time_s.median);
  if (s.source) {
    const EnergyFigures& f = m.energy.at(*s.source);
    j["avg_power_w"] = f.avg_power_w;
    j["j_per_rep"] = m.reps > 0 ? f.j / m.reps : 0.0;
    j["energy_confidence"] = f.confidence;
  } else {
    j["avg_power_w"] = nullptr;
    j["j_per_rep"] = nullptr;
    j["energy_confidence"] = nullptr;
  }
  return j;
}

// A source both states measured the machine with: the one rule over the
// sources both kept FLOP/J for (never a battery gauge: one phase ran on mains).
std::optional<std::string> common_source(const CRow& r) {
  const Side& a = r.side[0];
  const Side& b = r.side[1];
  if (!a.m || !b.m) return std::nullopt;
  return shared_headline(a.run->run, *a.m, b.run->run, *b.m);
}

std::string fmt_num(const json& v) {
  if (v.is_null()) return "";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return fmt::format("{:.9g}", v.get<double>());
  return csv_escape(v.get<std::string>());
}

const json& at_path(const json& j, std::initializer_list<const char*> path) {
  static const json none;
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return none;
    p = &(*p)[k];
  }
  return *p;
}

}  // namespace

SupplySnapshot read_supply(const std::string& root, double t_s) {
  SupplySnapshot s;
  s.t_s = t_s;
  const auto ps = power::read_power_state(root);
  if (!ps) return s;
  s.ac_online = ps->ac_online;
  s.ac_inferred = ps->ac_inferred;
  s.has_battery = !ps->batteries.empty();
  s.battery_percent = ps->battery_percent;
  if (s.has_battery) {
    s.battery_status = power::to_string(ps->batteries.front().status);
    double wh = 0;
    bool all = true;
    for (const auto& b : ps->batteries) {
      if (b.energy_wh) wh += *b.energy_wh;
      else all = false;
    }
    if (all) s.battery_energy_wh = wh;
  }
  return s;
}

std::string supply_state(const SupplySnapshot& s) {
  if (!s.ac_online) return "unknown";
  return *s.ac_online ? "mains" : "battery";
}

json to_json(const SupplySnapshot& s) {
  return {{"t_s", s.t_s},
          {"state", supply_state(s)},
          {"ac_online", s.ac_online ? json(*s.ac_online) : json(nullptr)},
          {"ac_inferred_from_battery_status", s.ac_inferred},
          {"battery_percent", json_or_null(s.battery_percent)},
          {"battery_energy_wh", json_or_null(s.battery_energy_wh)},
          {"battery_status", s.has_battery ? json(s.battery_status) : json(nullptr)}};
}

std::vector<std::string> suite_names() { return {"gemm-smoke", "gemm-gpt2", "gpt2-step", "paper"}; }

std::vector<SuitePart> suite_parts(const SuiteSpec& s) {
  const std::string flag = "--suite " + s.suite;
  if (s.suite == "gemm-smoke") {
    // Small shapes, one of them in the GPT-2 layout (NT): seconds per phase.
    return {{"gemm",
             {"run", "gemm", "--backend", gemm_backends(s), "--shapes",
              s.shapes.empty() ? "128,128,128;256,256,256;256,768,768,NT" : s.shapes, "--no-peak"},
             "small GEMMs on every available backend"}};
  }
  if (s.suite == "gemm-gpt2") {
    return {{"gemm",
             {"run", "gemm", "--backend", gemm_backends(s), "--shapes", s.shapes.empty() ? "gpt2-124m" : s.shapes},
             "the GEMMs of a GPT-2 124M training step (B=4, T=64) on every available backend"}};
  }
  if (s.suite != "gpt2-step" && s.suite != "paper")
    throw InputError(flag, "unknown suite", "use one of " + join(suite_names(), ", "));
  if (!s.have_gpt2)
    throw InputError(flag, "this build has no `run gpt2` command", "use --suite gemm-smoke or gemm-gpt2");
  if (s.suite == "gpt2-step") return {{"gpt2", gpt2_args(s, "d12", 4, ""), "a short GPT-2 124M training run"}};

  // paper: GPT-2 124M fine-tuning steps at B=4, T=64 with the GEMMs on the CPU
  // (llm.c's own matmul, the study's baseline, and the fastest CPU library)
  // and on the NPU (the device when present, else its simulator, labelled).
  std::vector<SuitePart> parts;
  auto avail = [&](const std::string& n) {
    for (const auto& b : s.backend_list)
      if (b.name == n) return b.available;
    return false;
  };
  if (avail("cpu:llmc")) parts.push_back({"cpu-llmc", gpt2_args(s, "d12", 6, "cpu:llmc"), "GEMMs on llm.c's CPU matmul"});
  if (!s.fastest_cpu.empty() && s.fastest_cpu != "cpu:llmc")
    parts.push_back({"cpu-" + s.fastest_cpu.substr(s.fastest_cpu.find(':') + 1), gpt2_args(s, "d12", 6, s.fastest_cpu),
                     "GEMMs on " + s.fastest_cpu});
  std::string npu, npu_note;
  if (avail("npu:xdna")) {
    npu = "npu:xdna";
    npu_note = "GEMMs on the NPU";
  } else {
    for (const auto& b : s.backend_list)
      if (b.available && b.simulated && b.name.rfind("npu:", 0) == 0) {
        npu = b.name;
        npu_note = "GEMMs on the NPU model " + b.name + " (simulated: no NPU on this machine)";
        break;
      }
  }
  if (npu.empty())
    throw InputError(flag, "neither npu:xdna nor an NPU simulator is available",
                     "run `flopwatt backends` to see why; use --suite gpt2-step for the CPU alone");
  if (parts.empty())
    throw InputError(flag, "no CPU GEMM backend is available", "run `flopwatt backends`");
  parts.push_back({"npu", gpt2_args(s, "d12", 6, npu), npu_note});
  return parts;
}

CooldownCheck check_cooldown(const std::vector<power::Temperature>& start, const std::vector<power::Temperature>& now,
                             double margin_c) {
  CooldownCheck c;
  bool any = false;
  for (const auto& t : now)
    for (const auto& s : start)
      if (s.id == t.id) {
        const double excess = t.celsius - (s.celsius + margin_c);
        if (!any || excess > c.worst_excess_c) {
          c.worst_excess_c = excess;
          c.worst_sensor = t.id;
        }
        any = true;
      }
  c.reached = !any || c.worst_excess_c <= 0;
  return c;
}

namespace {

using RowKey = std::pair<std::string, std::string>;  // configuration, backend

// One row per configuration and backend, each side from the first run of its
// phase that measured it.
std::vector<CRow> join_rows(const std::vector<LoadedRun>* const (&states)[2]) {
  std::vector<CRow> rows;
  std::map<RowKey, std::size_t> index;
  for (int s = 0; s < 2; ++s)
    for (const auto& run : *states[s])
      for (const auto& m : run.run.measurements) {
        if (!comparable(m)) continue;
        const auto k = std::make_pair(config_key(m), m.backend);
        auto it = index.find(k);
        if (it == index.end()) {
          CRow r;
          r.key = k.first;
          r.backend = k.second;
          r.first = &m;
          it = index.emplace(k, rows.size()).first;
          rows.push_back(r);
        }
        Side& side = rows[it->second].side[s];
        if (side.m) continue;
        side.m = &m;
        side.run = &run;
        side.source = headline_of(run.run, m).source;
      }
  return rows;
}

// The baseline backend per configuration, in one state, among the backends that ran it there.
std::map<std::string, std::string> baselines(const std::vector<CRow>& rows, int s, const ComparisonOptions& o) {
  std::map<std::string, std::string> baseline;
  std::map<std::string, std::vector<std::string>> have;
  for (const auto& r : rows)
    if (r.side[s].m) have[r.key].push_back(r.backend);
  for (auto& [key, list] : have) {
    const bool forced = !o.baseline_backend.empty() &&
                        std::find(list.begin(), list.end(), o.baseline_backend) != list.end();
    baseline[key] = forced ? o.baseline_backend : baseline_backend(list);
  }
  return baseline;
}

// A row against its configuration's baseline backend in the same state.
json speedup_json(const CRow& r, int s, const std::string& bb, const CRow* base) {
  json sp = {{"baseline", bb}, {"flop_per_s", nullptr}, {"ci95", nullptr}, {"flop_per_j", nullptr},
             {"flop_per_j_source", nullptr}};
  if (!base || !base->side[s].m) return sp;
  if (auto rr = rate_ratio(*r.side[s].m, *base->side[s].m)) {
    sp["flop_per_s"] = rr->ratio;
    sp["ci95"] = rr->ci95;
  }
  // Efficiency gains only between like measurements: the same energy source.
  const auto& a = r.side[s].source;
  const auto& b = base->side[s].source;
  const auto fa = fpj(*r.side[s].m, a), fb = fpj(*base->side[s].m, b);
  if (a && b && *a == *b && fa && fb && *fb > 0) {
    sp["flop_per_j"] = *fa / *fb;
    sp["flop_per_j_source"] = *a;
  }
  return sp;
}

json mains_over_battery_json(const CRow& r) {
  json q = {{"flop_per_s", nullptr}, {"ci95", nullptr}, {"flop_per_j", nullptr}, {"flop_per_j_source", nullptr}};
  if (r.side[0].m && r.side[1].m) {
    if (auto rr = rate_ratio(*r.side[0].m, *r.side[1].m)) {
      q["flop_per_s"] = rr->ratio;
      q["ci95"] = rr->ci95;
    }
    if (auto src = common_source(r)) {
      q["flop_per_j"] = *fpj(*r.side[0].m, src) / *fpj(*r.side[1].m, src);
      q["flop_per_j_source"] = *src;
    }
  }
  if (r.first->simulated) q["note"] = "simulated: modelled time and energy do not depend on the power supply";
  return q;
}

json comparison_method() {
  return {
      {"flop_per_s", "at the median time of each measurement; ci95: from both medians' 95% CIs, combined worst-case"},
      {"flop_per_j_mains",
       "the run's headline source unless it is a battery gauge (on mains it reads the charging current), else the "
       "widest other domain"},
      {"flop_per_j_battery", "the run's headline source (the battery gauge on a laptop without RAPL psys)"},
      {"mains_over_battery_flop_per_j", "only from a source that measured the machine in both states (same id)"},
      {"speedup", "backend / baseline backend of the same configuration in the same state; FLOP/J only when both "
                  "used the same source"}};
}

}  // namespace

json compare_mains_battery(const std::vector<LoadedRun>& mains, const std::vector<LoadedRun>& battery,
                           const ComparisonOptions& o) {
  const std::vector<LoadedRun>* const states[2] = {&mains, &battery};
  const std::vector<CRow> rows = join_rows(states);
  const std::map<std::string, std::string> baseline[2] = {baselines(rows, 0, o), baselines(rows, 1, o)};
  std::map<RowKey, const CRow*> by;
  for (const auto& r : rows) by[{r.key, r.backend}] = &r;

  json jrows = json::array();
  for (const auto& r : rows) {
    const Measurement& m = *r.first;
    json j = {{"workload", m.workload},
              {"op", m.op},
              {"label", config_label(m)},
              {"pass", json_or_null(m.pass)},
              {"layer", m.layer ? json(*m.layer) : json(nullptr)},
              {"backend", r.backend},
              {"dtype", m.dtype},
              {"shape", m.shape ? json{{"M", m.shape->M}, {"N", m.shape->N}, {"K", m.shape->K}} : json(nullptr)},
              {"flop", m.flop},
              {"simulated", m.simulated}};
    for (int s = 0; s < 2; ++s) {
      json side = side_json(r.side[s]);
      if (!side.is_null()) {
        const std::string& bb = baseline[s].at(r.key);
        const auto base = by.find({r.key, bb});
        side["speedup"] = speedup_json(r, s, bb, base == by.end() ? nullptr : base->second);
      }
      j[kStates[s]] = side;  // null: not measured in that state
    }
    j["mains_over_battery"] = mains_over_battery_json(r);
    jrows.push_back(j);
  }
  json out;
  out["kind"] = "flopwatt-mains-vs-battery";
  out["schema_version"] = 2;
  out["method"] = comparison_method();
  for (int s = 0; s < 2; ++s) {
    json labels = json::array();
    for (const auto& run : *states[s]) labels.push_back(run.label);
    out["runs"][kStates[s]] = labels;
  }
  out["rows"] = jrows;
  return out;
}

std::string comparison_csv(const json& c) {
  std::vector<std::string> cols = {"workload", "op", "pass", "layer", "backend", "dtype", "M", "N", "K", "simulated",
                                   "flop"};
  const char* side_cols[] = {"flop_per_s", "time/median_s", "reps", "energy_source", "avg_power_w", "flop_per_j",
                             "energy_confidence"};
  for (const char* s : kStates) {
    for (const char* f : side_cols) cols.push_back(std::string(s) + "/" + f);
    for (const char* f : {"baseline", "flop_per_s", "flop_per_j"}) cols.push_back(std::string(s) + "/speedup_" + f);
  }
  for (const char* f : {"flop_per_s", "ci95_lo", "ci95_hi", "flop_per_j", "flop_per_j_source"})
    cols.push_back(std::string("mains_over_battery/") + f);
  std::ostringstream os;
  for (std::size_t i = 0; i < cols.size(); ++i) os << (i ? "," : "") << cols[i];
  os << "\n";
  for (const auto& r : c.at("rows")) {
    std::vector<std::string> cells = {fmt_num(r["workload"]), fmt_num(r["op"]),    fmt_num(r["pass"]),
                                      fmt_num(r["layer"]),    fmt_num(r["backend"]), fmt_num(r["dtype"]),
                                      fmt_num(at_path(r, {"shape", "M"})), fmt_num(at_path(r, {"shape", "N"})),
                                      fmt_num(at_path(r, {"shape", "K"})), fmt_num(r["simulated"]),
                                      fmt_num(r["flop"])};
    for (const char* s : kStates) {
      for (const char* f : side_cols) {
        const json* v = r.contains(s) ? json_get(r[s], f) : nullptr;
        cells.push_back(v ? fmt_num(*v) : "");
      }
      for (const char* f : {"baseline", "flop_per_s", "flop_per_j"}) cells.push_back(fmt_num(at_path(r, {s, "speedup", f})));
    }
    const json& q = r["mains_over_battery"];
    cells.push_back(fmt_num(q["flop_per_s"]));
    cells.push_back(q["ci95"].is_array() ? fmt_num(q["ci95"][0]) : "");
    cells.push_back(q["ci95"].is_array() ? fmt_num(q["ci95"][1]) : "");
    cells.push_back(fmt_num(q["flop_per_j"]));
    cells.push_back(fmt_num(q["flop_per_j_source"]));
    for (std::size_t i = 0; i < cells.size(); ++i) os << (i ? "," : "") << cells[i];
    os << "\n";
  }
  return os.str();
}

std::string comparison_markdown(const json& c) {
  auto g = [](const json& v, double scale) { return v.is_number() ? fmt::format("{:.3g}", v.get<double>() * scale) : "-"; };
  std::ostringstream os;
  os << "| configuration | backend | mains GFLOP/s | battery GFLOP/s | mains/battery | mains GFLOP/J | battery GFLOP/J "
        "| mains/battery FLOP/J | speedup mains | speedup battery |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : c.at("rows")) {
    auto sp = [&](const char* s) {
      const json& x = at_path(r, {s, "speedup", "flop_per_s"});
      const json& b = at_path(r, {s, "speedup", "baseline"});
      if (!x.is_number()) return std::string("-");
      if (b.is_string() && b.get<std::string>() == r["backend"].get<std::string>()) return std::string("(baseline)");
      return fmt::format("{:.3g}x vs {}", x.get<double>(), b.get<std::string>());
    };
    os << "| " << r["label"].get<std::string>() << " | " << r["backend"].get<std::string>()
       << (r["simulated"].get<bool>() ? " (sim)" : "") << " | " << g(at_path(r, {"mains", "flop_per_s"}), 1e-9)
       << " | " << g(at_path(r, {"battery", "flop_per_s"}), 1e-9) << " | "
       << g(r["mains_over_battery"]["flop_per_s"], 1) << " | " << g(at_path(r, {"mains", "flop_per_j"}), 1e-9)
       << " | " << g(at_path(r, {"battery", "flop_per_j"}), 1e-9) << " | "
       << g(r["mains_over_battery"]["flop_per_j"], 1) << " | " << sp("mains") << " | " << sp("battery") << " |\n";
  }
  return os.str();
}

namespace {

struct PaperFigure {
  const char* id;
  const char* what;
  double paper_lo, paper_hi;
};
// The figures as the paper's abstract and results state them.
constexpr PaperFigure kPaper[] = {
    {"gemm_speedup_mains", "GEMM FLOP/s, NPU over CPU, per GPT-2 GEMM, on mains", 2.8, 3.1},
    {"step_speedup_mains", "training step FLOP/s, NPU over CPU, on mains", 1.7, 1.7},
    {"step_speedup_battery", "training step FLOP/s, NPU over CPU, on battery", 1.2, 1.2},
    {"step_flop_per_j_battery", "training step FLOP/J, NPU over CPU, on battery", 1.4, 1.4},
};

bool is_npu(const json& r) { return r["backend"].get<std::string>().rfind("npu:", 0) == 0; }

const json* llmc_speedup(const json& r, const char* state) {
  const json& sp = at_path(r, {state, "speedup"});
  if (!sp.is_object() || sp["baseline"] != "cpu:llmc") return nullptr;
  return &sp;
}

}  // namespace

json paper_figures(const json& c) {
  json out;
  out["reference"] = "Rösti & Franz (2025), arXiv 2504.03083: GPT-2 124M fine-tuning in llm.c, GEMMs on the AMD "
                     "XDNA NPU against llm.c's own CPU matmul";
  out["cpu_baseline"] = "cpu:llmc";
  std::string npu;
  bool simulated = false;
  std::vector<double> gemm;
  double cpu_s = 0, npu_s = 0;  // over the GEMM rows both backends ran on mains: time per FLOP summed
  json step[2], step_fpj;
  for (const auto& r : c.at("rows")) {
    if (r["workload"] != "gpt2" || !is_npu(r)) continue;
    if (npu.empty()) npu = r["backend"].get<std::string>();
    if (r["backend"] != npu) continue;
    simulated = simulated || r["simulated"].get<bool>();  // its GEMM rows are; the CPU's ops on that run are not
    if (r["op"] == "step") {
      for (int s = 0; s < 2; ++s)
        if (const json* sp = llmc_speedup(r, kStates[s]); sp && (*sp)["flop_per_s"].is_number())
          step[s] = (*sp)["flop_per_s"];
      if (const json* sp = llmc_speedup(r, "battery"); sp && (*sp)["flop_per_j"].is_number()) step_fpj = (*sp)["flop_per_j"];
      continue;
    }
    const json* sp = llmc_speedup(r, "mains");
    if (r["shape"].is_null() || !sp || !(*sp)["flop_per_s"].is_number()) continue;
    const double x = (*sp)["flop_per_s"].get<double>(), fps = at_path(r, {"mains", "flop_per_s"}).get<double>();
    const double flop = r["flop"].get<double>();
    gemm.push_back(x);
    npu_s += flop / fps;
    cpu_s += flop / (fps / x);
  }
  out["npu"] = npu.empty() ? json(nullptr) : json(npu);
  out["npu_simulated"] = simulated;
  json figs = json::array();
  for (const auto& p : kPaper) {
    json f = {{"id", p.id}, {"what", p.what}, {"paper", p.paper_lo == p.paper_hi ? json(p.paper_lo) : json({p.paper_lo, p.paper_hi})},
              {"here", nullptr}, {"why_missing", nullptr}};
    const std::string id = p.id;
    const bool battery = id.find("battery") != std::string::npos;
    if (npu.empty()) {
      f["why_missing"] = "no GPT-2 run with the GEMMs on an NPU backend (npu:xdna or npu:sim-*)";
    } else if (id == "gemm_speedup_mains") {
      if (gemm.empty()) {
        f["why_missing"] = "no GPT-2 GEMM row of cpu:llmc and " + npu + " both on mains";
      } else {
        f["here"] = {{"min", *std::min_element(gemm.begin(), gemm.end())},
                     {"max", *std::max_element(gemm.begin(), gemm.end())},
                     {"all_gemms", cpu_s / npu_s},
                     {"rows", gemm.size()}};
      }
    } else if (id == "step_flop_per_j_battery") {
      f["here"] = step_fpj;
      if (step_fpj.is_null())
        f["why_missing"] = step[1].is_null() ? "no battery phase with both cpu:llmc and " + npu
                                             : std::string("no FLOP/J from one source for both runs on battery");
    } else {
      f["here"] = step[battery ? 1 : 0];
      if (f["here"].is_null())
        f["why_missing"] = std::string("no ") + (battery ? "battery" : "mains") + " phase with both cpu:llmc and " + npu;
    }
    if (simulated && !f["here"].is_null())
      f["note"] = battery ? "NPU time and energy modelled; the CPU's share measured on battery"
                          : "NPU time modelled; the CPU's share measured";
    figs.push_back(f);
  }
  out["figures"] = figs;
  return out;
}

std::string paper_markdown(const json& f) {
  auto x = [](const json& v) { return v.is_number() ? fmt::format("{:.2f}x", v.get<double>()) : std::string("-"); };
  std::ostringstream os;
  os << "Rösti & Franz (2025) side by side: " << f["cpu_baseline"].get<std::string>() << " against "
     << (f["npu"].is_string() ? f["npu"].get<std::string>() + (f["npu_simulated"].get<bool>() ? " (simulated)" : "")
                              : std::string("no NPU run"))
     << "\n\n| figure | paper | here | |\n|---|---|---|---|\n";
  for (const auto& r : f["figures"]) {
    const json& p = r["paper"];
    const std::string paper = p.is_array() ? fmt::format("{:.1f}-{:.1f}x", p[0].get<double>(), p[1].get<double>())
                                           : fmt::format("{:.1f}x", p.get<double>());
    std::string here = "-";
    const json& h = r["here"];
    if (h.is_object())
      here = fmt::format("{:.2f}-{:.2f}x ({} GEMMs; {:.2f}x over all)", h["min"].get<double>(), h["max"].get<double>(),
                         h["rows"].get<std::size_t>(), h["all_gemms"].get<double>());
    else if (h.is_number())
      here = x(h);
    const std::string why = r["why_missing"].is_string() ? r["why_missing"].get<std::string>()
                            : r.contains("note")        ? r["note"].get<std::string>()
                                                        : "";
    os << "| " << r["what"].get<std::string>() << " | " << paper << " | " << here << " | " << why << " |\n";
  }
  return os.str();
}

json paper_report(const std::vector<LoadedRun>& runs) {
  std::vector<LoadedRun> mains, battery;
  std::size_t assumed = 0;
  for (const auto& r : runs) {
    const auto state = run_supply_state(r.run);
    assumed += state ? 0 : 1;
    (state == "battery" ? battery : mains).push_back(r);
  }
  json f = paper_figures(compare_mains_battery(mains, battery, ComparisonOptions{"cpu:llmc"}));
  f["runs"] = {{"mains", mains.size()}, {"battery", battery.size()}};
  if (assumed)
    f["assumed_mains"] = std::to_string(assumed) + " run(s) from a machine without a power supply class (a desktop or "
                         "a virtual machine) are counted as on mains";
  return f;
}

std::optional<std::string> run_supply_state(const Run& run) {
  const json& c = run.context;
  if (c.contains("ac_online") && c["ac_online"].is_boolean()) return c["ac_online"].get<bool>() ? "mains" : "battery";
  return std::nullopt;
}

}  // namespace flopwatt
