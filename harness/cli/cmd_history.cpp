// `flopwatt history METRIC`: one metric of every stored run, per configuration,
// backend and machine, oldest first, with its change points marked.
#include <fmt/core.h>

#include <set>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iterator>

#include "harness/analysis/change_points.h"
#include "harness/cli/commands.h"
#include "harness/output/safe_file.h"
#include "harness/output/text.h"
#include "harness/store/store.h"
#include "workloads/error.h"

namespace flopwatt {

namespace {

struct HistoryArgs {
  store::HistoryFilter filter;
  std::string store, format = "md";
  double threshold_pct = 5;
  std::string plot;  // an SVG file
};

// The series as an SVG line chart: one polyline per series over its runs in
// time order, change points circled in red. Self-contained (no plotting
// library): a CI job can attach it as it is.
std::string history_svg(const std::vector<store::HistoryPoint>& pts,
                        const std::vector<std::pair<std::size_t, std::size_t>>& series, const std::vector<bool>& marks,
                        const std::string& metric) {
  constexpr double W = 900, H = 420, L = 70, R = 260, T = 30, B = 40;
  constexpr std::size_t kMaxSeries = 12;
  static const char* colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                                  "#7f7f7f", "#bcbd22", "#17becf", "#d62728", "#393b79", "#637939"};
  double lo = 0, hi = 0;
  std::size_t longest = 1;
  bool any = false;
  for (std::size_t k = 0; k < series.size() && k < kMaxSeries; ++k) {
    longest = std::max(longest, series[k].second - series[k].first);
    for (std::size_t i = series[k].first; i < series[k].second; ++i) {
      lo = any ? std::min(lo, pts[i].value) : pts[i].value;
      hi = any ? std::max(hi, pts[i].value) : pts[i].value;
      any = true;
    }
  }
  if (hi <= lo) hi = lo + (lo == 0 ? 1 : std::abs(lo) * 0.1);
  const auto x = [&](std::size_t j) { return L + (W - L - R) * (longest > 1 ? double(j) / double(longest - 1) : 0.5); };
  const auto y = [&](double v) { return T + (H - T - B) * (1 - (v - lo) / (hi - lo)); };
  auto esc = [](const std::string& t) {
    std::string o;
    for (char c : t) o += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
    return o;
  };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"18\" font-size=\"13\">{} over stored runs (oldest left; red circles: change points)</text>\n"
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n"
      "<text x=\"4\" y=\"{}\">{:.4g}</text><text x=\"4\" y=\"{}\">{:.4g}</text>\n",
      W, H, L, esc(metric), L, H - B, W - R, H - B, y(hi) + 4, hi, y(lo) + 4, lo);
  for (std::size_t k = 0; k < series.size() && k < kMaxSeries; ++k) {
    const auto [b, e] = series[k];
    std::string line;
    for (std::size_t i = b; i < e; ++i) line += fmt::format("{:.1f},{:.1f} ", x(i - b), y(pts[i].value));
    svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" points=\"{}\"/>\n", colours[k], line);
    for (std::size_t i = b; i < e; ++i)
      if (marks[i])
        svg += fmt::format("<circle class=\"change\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"none\" stroke=\"red\"/>\n",
                           x(i - b), y(pts[i].value));
    svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{} {} ({})</text>\n", W - R + 8, T + 14 * double(k) + 10,
                       colours[k], esc(pts[b].series->label), esc(pts[b].series->backend), esc(pts[b].series->machine));
  }
  if (series.size() > kMaxSeries)
    svg += fmt::format("<text x=\"{}\" y=\"{}\">+{} more series (narrow with --op, --backend, --machine)</text>\n",
                       W - R + 8, T + 14 * double(kMaxSeries) + 10, series.size() - kMaxSeries);
  return svg + "</svg>\n";
}

using Spans = std::vector<std::pair<std::size_t, std::size_t>>;  // [begin, end) of each series in the points

// An --op no stored measurement has: "0 point(s)" would read as a series with
// no runs yet, so the error names the ops the store holds.
[[noreturn]] void unknown_op(store::Store& s, const store::HistoryFilter& filter) {
  store::HistoryFilter every = filter;
  every.op.clear();
  std::set<std::string> ops;
  for (const auto& sr : s.history(every).series) {
    const auto from = sr.config_key.find('|');  // workload|op|... (harness/output/run_model.h config_key)
    if (from != std::string::npos) ops.insert(sr.config_key.substr(from + 1, sr.config_key.find('|', from + 1) - from - 1));
  }
  std::string known;
  for (const auto& o : ops) known += (known.empty() ? "" : ", ") + o;
  throw InputError("--op " + filter.op, "no stored measurement has this op (with the other filters given)",
                   ops.empty() ? std::string("record a run first, or drop the other filters")
                               : "pass one of the stored ops: " + known);
}

// Series: consecutive points of one configuration, backend and machine (the query's order).
Spans series_of(const std::vector<store::HistoryPoint>& pts) {
  Spans series;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const bool same = i > 0 && pts[i].series == pts[i - 1].series;
    if (same) series.back().second = i + 1;
    else series.emplace_back(i, i + 1);
  }
  return series;
}

std::vector<bool> change_marks(const std::vector<store::HistoryPoint>& pts, const Spans& series, double threshold_pct) {
  std::vector<bool> marks(pts.size(), false);
  for (const auto& [b, e] : series) {
    std::vector<double> v;
    for (std::size_t i = b; i < e; ++i) v.push_back(pts[i].value);
    const auto m = change_points(v, threshold_pct / 100);
    for (std::size_t i = b; i < e; ++i) marks[i] = m[i - b];
  }
  return marks;
}

void print_history_json(const std::vector<store::HistoryPoint>& pts, const std::vector<bool>& marks,
                        const std::string& metric) {
  nlohmann::json j = nlohmann::json::array();
  for (std::size_t i = 0; i < pts.size(); ++i)
    j.push_back({{"configuration", pts[i].series->label}, {"config_key", pts[i].series->config_key},
                 {"backend", pts[i].series->backend}, {"machine", pts[i].series->machine},
                 {"run_id", pts[i].run->run_id}, {"started_utc", pts[i].run->started_utc},
                 {"git_revision", pts[i].run->git_revision}, {metric, pts[i].value},
                 {"change_point", bool(marks[i])}});
  fmt::print("{}\n", j.dump(2));
}

void print_history_csv(const std::vector<store::HistoryPoint>& pts, const Spans& series, const std::vector<bool>& marks,
                       const std::string& metric) {
  // One buffer written once, each series' text escaped once: tens of
  // thousands of lines went out one formatted print each.
  std::string out = fmt::format("configuration,backend,machine,run_id,started_utc,git_revision,{},change_point\n", metric);
  auto it = std::back_inserter(out);
  for (const auto& [b, e] : series) {
    const store::HistorySeries& sr = *pts[b].series;
    const std::string head = csv_escape(sr.label) + "," + csv_escape(sr.backend) + "," + csv_escape(sr.machine) + ",";
    for (std::size_t i = b; i < e; ++i) {
      const store::HistoryRun& r = *pts[i].run;
      fmt::format_to(it, "{}{},{},{},{},{}\n", head, csv_escape(r.run_id), csv_escape(r.started_utc),
                     csv_escape(r.git_revision), pts[i].value, marks[i] ? 1 : 0);
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void print_history_markdown(const std::vector<store::HistoryPoint>& pts, const Spans& series,
                            const std::vector<bool>& marks, const std::string& metric, double threshold_pct) {
  std::string md;
  for (const auto& [b, e] : series) {
    md += fmt::format("#### {} on {} ({})\n\n| started (UTC) | run id | git | {} | vs previous | |\n|---|---|---|---|---|---|\n",
                      md_cell(pts[b].series->label), md_cell(pts[b].series->backend),
                      md_cell(pts[b].series->machine), metric);
    for (std::size_t i = b; i < e; ++i) {
      const double prev = i > b ? pts[i - 1].value : 0;
      md += fmt::format("| {} | {} | {} | {:.4g} | {} | {} |\n", md_cell(pts[i].run->started_utc),
                        md_cell(pts[i].run->run_id), md_cell(pts[i].run->git_revision), pts[i].value,
                        i > b && prev != 0 ? fmt::format("{:+.1f}%", 100 * (pts[i].value - prev) / prev) : "",
                        marks[i] ? "**change**" : "");
    }
    md += "\n";
  }
  md += fmt::format("{} point(s) in {} series; **change**: the median of up to {} runs from here differs by more "
                    "than {}% from the median of as many runs before (at least 2 each side).\n",
                    pts.size(), series.size(), kChangeWindow, shortest(threshold_pct));
  fmt::print("{}", md);
}

int run_history(const HistoryArgs& a) {
  if (a.format != "md" && a.format != "csv" && a.format != "json")
    throw InputError("--format " + a.format, "unknown format", "use md, csv or json");
  if (!(a.threshold_pct > 0) || !std::isfinite(a.threshold_pct))
    throw InputError("--threshold", "must be a positive percentage", "pass for example --threshold 5");
  auto s = store::Store::open(store::resolve(a.store), false);
  const store::History h = s->history(a.filter);
  const auto& pts = h.points;
  if (pts.empty() && !a.filter.op.empty()) unknown_op(*s, a.filter);
  const Spans series = series_of(pts);
  const std::vector<bool> marks = change_marks(pts, series, a.threshold_pct);
  const std::string& metric = a.filter.metric;
  if (!a.plot.empty())
    OutputDir::parent_of(a.plot, "--plot")
        .replace(std::filesystem::path(a.plot).filename().string(), history_svg(pts, series, marks, metric));
  if (a.format == "json") print_history_json(pts, marks, metric);
  else if (a.format == "csv") print_history_csv(pts, series, marks, metric);
  else print_history_markdown(pts, series, marks, metric, a.threshold_pct);
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
  cmd->add_option("--plot", a->plot, "Also draw the series into this SVG file (change points circled)");
  add_store_option(cmd, a->store);
  cmd->callback([a, &st] { st.exit_code = store::naming_store(a->store, [&] { return run_history(*a); }); });
}

}  // namespace flopwatt
