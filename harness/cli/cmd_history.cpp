// `flopwatt history METRIC`: one metric of every stored run, per configuration,
// backend and machine, oldest first, with its change points marked.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "harness/cli/commands.h"
#include "harness/output/text.h"
#include "harness/store/store.h"
#include "workloads/error.h"

namespace flopwatt {

namespace {

struct HistoryArgs {
  store::HistoryFilter filter;
  std::string store, format = "md";
  bool no_store = false;
  double threshold_pct = 5;
};

// How many points on each side of a candidate the change test looks at.
constexpr std::size_t kWindow = 5;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A step, not a blip: point i starts a change when the medians of the k
// points before it and the k points from it on (k as large as both sides
// allow, at least 2, at most kWindow) differ by more than the threshold and
// point i itself has left the old level; of consecutive candidates only the
// first is marked.
std::vector<bool> change_points(const std::vector<double>& v, double thr) {
  std::vector<bool> mark(v.size(), false);
  for (std::size_t i = 2; i + 2 <= v.size(); ++i) {
    const std::size_t k = std::min({i, v.size() - i, kWindow});
    const auto at = [&v](std::size_t j) { return v.begin() + static_cast<std::ptrdiff_t>(j); };
    const double b = median(std::vector<double>(at(i - k), at(i)));
    const double a = median(std::vector<double>(at(i), at(i + k)));
    mark[i] = b != 0 && std::abs(a - b) / std::abs(b) > thr && std::abs(v[i] - b) / std::abs(b) > thr && !mark[i - 1];
  }
  return mark;
}

int run_history(const HistoryArgs& a) {
  if (a.no_store) throw InputError("--no-store", "history reads the store", "drop --no-store");
  if (a.format != "md" && a.format != "csv" && a.format != "json")
    throw InputError("--format " + a.format, "unknown format", "use md, csv or json");
  if (!(a.threshold_pct > 0) || !std::isfinite(a.threshold_pct))
    throw InputError("--threshold", "must be a positive percentage", "pass for example --threshold 5");
  auto s = store::Store::open(store::resolve(a.store), false);
  const auto pts = s->history(a.filter);
  // Series: consecutive points of one configuration, backend and machine (the query's order).
  std::vector<std::pair<std::size_t, std::size_t>> series;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const bool same = i > 0 && pts[i].config_key == pts[i - 1].config_key && pts[i].backend == pts[i - 1].backend &&
                      pts[i].machine == pts[i - 1].machine;
    if (same) series.back().second = i + 1;
    else series.emplace_back(i, i + 1);
  }
  std::vector<bool> marks(pts.size(), false);
  for (const auto& [b, e] : series) {
    std::vector<double> v;
    for (std::size_t i = b; i < e; ++i) v.push_back(pts[i].value);
    const auto m = change_points(v, a.threshold_pct / 100);
    for (std::size_t i = b; i < e; ++i) marks[i] = m[i - b];
  }
  const std::string& metric = a.filter.metric;
  if (a.format == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (std::size_t i = 0; i < pts.size(); ++i)
      j.push_back({{"configuration", pts[i].label}, {"config_key", pts[i].config_key}, {"backend", pts[i].backend},
                   {"machine", pts[i].machine}, {"run_id", pts[i].run_id}, {"started_utc", pts[i].started_utc},
                   {"git_revision", pts[i].git_revision}, {metric, pts[i].value}, {"change_point", bool(marks[i])}});
    fmt::print("{}\n", j.dump(2));
  } else if (a.format == "csv") {
    fmt::print("configuration,backend,machine,run_id,started_utc,git_revision,{},change_point\n", metric);
    for (std::size_t i = 0; i < pts.size(); ++i)
      fmt::print("{},{},{},{},{},{},{},{}\n", csv_escape(pts[i].label), pts[i].backend, csv_escape(pts[i].machine),
                 pts[i].run_id, pts[i].started_utc, pts[i].git_revision, shortest(pts[i].value), marks[i] ? 1 : 0);
  } else {
    std::string md;
    for (const auto& [b, e] : series) {
      md += fmt::format("#### {} on {} ({})\n\n| started (UTC) | run id | git | {} | vs previous | |\n|---|---|---|---|---|---|\n",
                        pts[b].label, pts[b].backend, pts[b].machine, metric);
      for (std::size_t i = b; i < e; ++i) {
        const double prev = i > b ? pts[i - 1].value : 0;
        md += fmt::format("| {} | {} | {} | {:.4g} | {} | {} |\n", pts[i].started_utc, pts[i].run_id,
                          pts[i].git_revision, pts[i].value,
                          i > b && prev != 0 ? fmt::format("{:+.1f}%", 100 * (pts[i].value - prev) / prev) : "",
                          marks[i] ? "**change**" : "");
      }
      md += "\n";
    }
    md += fmt::format("{} point(s) in {} series; **change**: the median of up to {} runs from here differs by more "
                      "than {}% from the median of as many runs before (at least 2 each side).\n",
                      pts.size(), series.size(), kWindow, shortest(a.threshold_pct));
    fmt::print("{}", md);
  }
  return 0;
}

}  // namespace

void register_history(CLI::App& app, CliState& st) {
  auto* cmd = app.add_subcommand("history", "One metric over the stored runs, per configuration, with change points");
  auto a = std::make_shared<HistoryArgs>();
  cmd->add_option("metric", a->filter.metric, "flop_per_s | flop_per_j | median_s | energy_j")->required();
  cmd->add_option("--backend", a->filter.backend, "Only this backend (cpu:onednn, ...)");
  cmd->add_option("--op", a->filter.op, "Only this operation (fc_dweight, qkv, ...)");
  cmd->add_option("--machine", a->filter.machine, "Only this machine (label, hostname or id)");
  cmd->add_option("--format", a->format, "md (default) | csv | json");
  cmd->add_option("--threshold", a->threshold_pct, "Change-point threshold in percent (default 5)");
  add_store_options(cmd, a->store, a->no_store);
  cmd->callback([a, &st] { st.exit_code = run_history(*a); });
}

}  // namespace flopwatt
