// `flopwatt compare BASE NEW`: two runs row by row, time with the Mann-Whitney
// U test on the repetitions (harness/analysis/utest.h, as `report A.json B.json`)
// and FLOP/J from one shared energy source (harness/analysis/report.h);
// --fail-on-regression PCT exits 3 for CI.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "harness/analysis/bench_compare.h"
#include "harness/analysis/report.h"
#include "harness/analysis/utest.h"
#include "harness/cli/commands.h"
#include "harness/output/text.h"
#include "harness/store/store.h"
#include "workloads/error.h"

namespace flopwatt {

namespace {

struct CompareArgs {
  std::string base, next, store, format = "md";
  double fail_pct = -1;  // < 0: never fail
  double alpha = kUTestAlpha;
};

struct CompareRow {
  std::string label, backend;
  const Measurement *a = nullptr, *b = nullptr;
  double time_change = 0;               // (median_b - median_a) / median_a
  std::optional<UTestResult> utest;     // on the repetition times
  std::optional<std::string> source;    // the energy source both FLOP/J figures come from
  std::optional<double> fpj_a, fpj_b, fpj_change;
  bool slower = false, less_efficient = false;  // beyond the threshold
};

// A directory (run or campaign: its first run), else a reference into the store.
LoadedRun resolve(const std::string& ref, const CompareArgs& a, const char* what,
                  std::unique_ptr<store::Store>& s) {
  std::error_code ec;
  if (std::filesystem::is_directory(ref, ec)) {
    auto runs = load_runs(ref);
    return std::move(runs.front());
  }
  if (!s) s = store::Store::open(store::resolve(a.store), false);
  const auto id = s->resolve_run(ref);
  if (!id)
    throw InputError(std::string(what) + " " + ref, "is neither a directory nor a run in " + store::masked(s->target().spec),
                     "pass a run directory, a run id from `flopwatt store ls`, latest, previous, or a git revision");
  LoadedRun lr;
  lr.label = *id;
  lr.run = run_from_json(nlohmann::json::parse(*s->run_json(*id)));
  return lr;
}

std::vector<CompareRow> compare_rows(const LoadedRun& base, const LoadedRun& next, const CompareArgs& a) {
  std::map<std::pair<std::string, std::string>, const Measurement*> in_base;
  for (const auto& m : base.run.measurements)
    if (comparable(m)) in_base.emplace(std::make_pair(config_key(m), m.backend), &m);
  const double thr = a.fail_pct < 0 ? 0.05 : a.fail_pct / 100;
  std::vector<CompareRow> rows;
  for (const auto& m : next.run.measurements) {
    if (!comparable(m)) continue;
    auto it = in_base.find({config_key(m), m.backend});
    if (it == in_base.end()) continue;
    CompareRow r;
    r.label = config_label(m);
    if (m.threads) r.label += fmt::format(" ({} threads)", *m.threads);
    r.backend = m.backend;
    r.a = it->second;
    r.b = &m;
    r.time_change = r.a->time_s.median > 0 ? (r.b->time_s.median - r.a->time_s.median) / r.a->time_s.median : 0;
    if (r.a->rep_times_s.size() >= kUTestMinReps && r.b->rep_times_s.size() >= kUTestMinReps)
      r.utest = mann_whitney_u(r.a->rep_times_s, r.b->rep_times_s);
    r.source = shared_headline(base.run, *r.a, next.run, *r.b);  // the one headline rule
    if (r.source) {
      auto fa = r.a->energy.find(*r.source), fb = r.b->energy.find(*r.source);
      if (fa != r.a->energy.end() && fb != r.b->energy.end()) {
        r.fpj_a = fa->second.flop_per_j;
        r.fpj_b = fb->second.flop_per_j;
        if (r.fpj_a && r.fpj_b && *r.fpj_a > 0) r.fpj_change = (*r.fpj_b - *r.fpj_a) / *r.fpj_a;
      }
    }
    // Slower counts when the U test says the times differ (or cannot say: one repetition).
    const bool significant = !r.utest || r.utest->p < a.alpha;
    r.slower = r.time_change > thr && significant;
    r.less_efficient = r.fpj_change && *r.fpj_change < -thr;
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string pct(double x) { return fmt::format("{:+.1f}%", 100 * x); }

std::string run_line(const LoadedRun& r) {
  const auto& c = r.run.context;
  auto s = [&](const char* k) { return c.contains(k) && c[k].is_string() ? c[k].get<std::string>() : std::string("?"); };
  return fmt::format("`{}` (git {}, {}, started {})", md_cell(r.run.run_id), md_cell(s("flopwatt_git_revision")),
                     md_cell(c.contains("machine_label") ? s("machine_label") : s("hostname")),
                     md_cell(s("started_utc")));
}

int run_compare(const CompareArgs& a) {
  if (a.fail_pct >= 0 && !std::isfinite(a.fail_pct))
    throw InputError("--fail-on-regression", "must be a finite percentage", "pass for example --fail-on-regression 5");
  if (a.format != "md" && a.format != "markdown" && a.format != "csv" && a.format != "json")
    throw InputError("--format " + a.format, "unknown format", "use md, csv or json");
  std::unique_ptr<store::Store> s;
  const LoadedRun base = resolve(a.base, a, "BASE", s);
  const LoadedRun next = resolve(a.next, a, "NEW", s);
  // A regression gate that compared nothing, or a run with itself, would pass for no reason.
  if (a.fail_pct >= 0 && base.run.run_id == next.run.run_id)
    throw InputError("compare " + a.base + " " + a.next, "both name run " + base.run.run_id + ": it would be compared with itself",
                     "name two different runs (latest and previous, or two run ids from `flopwatt store ls`)");
  const auto rows = compare_rows(base, next, a);
  if (a.fail_pct >= 0 && rows.empty())
    throw InputError("compare " + a.base + " " + a.next,
                     "the runs share no configuration (rows match on every configuration field and the backend), so "
                     "--fail-on-regression has nothing to gate",
                     "compare runs of the same workload, shapes, dtype and backend");
  std::size_t regressions = 0;
  for (const auto& r : rows) regressions += (r.slower || r.less_efficient) ? 1 : 0;
  const double thr_pct = a.fail_pct < 0 ? 5 : a.fail_pct;
  if (a.format == "json") {
    nlohmann::json j = {{"base", base.run.run_id}, {"new", next.run.run_id}, {"threshold_pct", thr_pct},
                        {"alpha", a.alpha}, {"regressions", regressions}, {"rows", nlohmann::json::array()}};
    for (const auto& r : rows)
      j["rows"].push_back({{"configuration", r.label}, {"backend", r.backend},
                           {"median_s_base", r.a->time_s.median}, {"median_s_new", r.b->time_s.median},
                           {"time_change", r.time_change}, {"utest_p", r.utest ? nlohmann::json(r.utest->p) : nullptr},
                           {"energy_source", json_or_null(r.source)}, {"flop_per_j_base", json_or_null(r.fpj_a)},
                           {"flop_per_j_new", json_or_null(r.fpj_b)}, {"flop_per_j_change", json_or_null(r.fpj_change)},
                           {"slower", r.slower}, {"less_efficient", r.less_efficient}});
    fmt::print("{}\n", j.dump(2));
  } else if (a.format == "csv") {
    fmt::print("configuration,backend,median_s_base,median_s_new,time_change,utest_p,energy_source,flop_per_j_base,"
               "flop_per_j_new,flop_per_j_change,slower,less_efficient\n");
    auto o = [](const std::optional<double>& v) { return v ? shortest(*v) : std::string(); };
    for (const auto& r : rows)
      fmt::print("{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_escape(r.label), csv_escape(r.backend), shortest(r.a->time_s.median),
                 shortest(r.b->time_s.median), shortest(r.time_change), r.utest ? shortest(r.utest->p) : "",
                 csv_escape(r.source.value_or("")), o(r.fpj_a), o(r.fpj_b), o(r.fpj_change), r.slower ? 1 : 0,
                 r.less_efficient ? 1 : 0);
  } else {
    std::string md = "### flopwatt compare\n\n";
    md += "- base: " + run_line(base) + "\n- new: " + run_line(next) + "\n\n";
    md += "| configuration | backend | base ms | new ms | time | p (U test) | GFLOP/J base | GFLOP/J new | FLOP/J | |\n"
          "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& r : rows) {
      const std::string mark = r.slower || r.less_efficient ? ":x: regression" : "";
      md += fmt::format("| {} | {} | {:.4g} | {:.4g} | {} | {} | {} | {} | {} | {} |\n", md_cell(r.label), md_cell(r.backend),
                        1e3 * r.a->time_s.median, 1e3 * r.b->time_s.median, pct(r.time_change),
                        r.utest ? fmt::format("{:.3g}", r.utest->p) : "n/a (1 rep)",
                        r.fpj_a ? fmt::format("{:.4g}", *r.fpj_a * 1e-9) : "-",
                        r.fpj_b ? fmt::format("{:.4g}", *r.fpj_b * 1e-9) : "-", r.fpj_change ? pct(*r.fpj_change) : "-",
                        mark);
    }
    md += fmt::format(
        "\n{} of {} row(s) regressed: slower by more than {}% with the U test's p < {} on the repetition times, or "
        "FLOP/J lower by more than {}% (from the energy source both runs measured).\n",
        regressions, rows.size(), shortest(thr_pct), shortest(a.alpha), shortest(thr_pct));
    fmt::print("{}", md);
  }
  if (rows.empty())
    fmt::print(stderr, "warning: {} and {} share no configuration (rows are matched on every configuration field and "
                       "the backend)\n", md_cell(base.run.run_id), md_cell(next.run.run_id));
  if (a.fail_pct >= 0 && regressions > 0) {
    fmt::print(stderr, "flopwatt compare: {} regression(s) beyond {}%\n", regressions, shortest(a.fail_pct));
    return 3;
  }
  return 0;
}

}  // namespace

void register_compare(CLI::App& app, CliState& st) {
  auto* cmd = app.add_subcommand(
      "compare", "Compare two runs row by row: time (Mann-Whitney U on the repetitions) and FLOP/J; exit 3 on a regression");
  auto a = std::make_shared<CompareArgs>();
  cmd->add_option("base", a->base, "Baseline: run directory, stored run id, latest, previous, or a git revision")
      ->required();
  cmd->add_option("new", a->next, "Contender, as BASE")->required();
  add_store_option(cmd, a->store);
  cmd->add_option("--fail-on-regression", a->fail_pct,
                  "Exit 3 when a row got slower or less efficient by more than PCT percent");
  cmd->add_option("--alpha", a->alpha, "Significance level of the U test (default 0.05)");
  cmd->add_option("--format", a->format, "md (default, fit for a pull-request comment) | csv | json");
  cmd->callback([a, &st] { st.exit_code = store::naming_store(a->store, [&] { return run_compare(*a); }); });
}

}  // namespace flopwatt
