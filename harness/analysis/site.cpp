#include "harness/analysis/site.h"

#include <fmt/core.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "harness/analysis/change_points.h"
#include "harness/analysis/html_report_assets.h"
#include "harness/output/safe_file.h"
#include "harness/output/text.h"
#include "workloads/error.h"

namespace fs = std::filesystem;

namespace flopwatt {

using nlohmann::json;

namespace {

// Bump when a run page's markup changes: the manifest then lists every run
// page as stale, and the next build renders them again.
constexpr int kRunPageVersion = 1;

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

bool plain_name(const std::string& s) {
  if (s.empty() || s.size() > 120 || s[0] == '.') return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return true;
}

std::string esc(std::string_view s) { return html_escape(s); }

// Writes a file of the site only when its bytes differ from what is there.
class SiteDir {
 public:
  SiteDir(const std::string& root, SiteStats& st) : root_(root), top_(root, "--out"), st_(st) {}
  void put(const std::string& sub, const std::string& name, const std::string& text) {
    const fs::path p = fs::path(root_) / sub / name;
    std::ifstream f(p, std::ios::binary);
    if (f) {
      std::string old(std::istreambuf_iterator<char>(f), {});
      if (old == text) {
        ++st_.unchanged;
        return;
      }
    }
    dir(sub).replace(name, text);
    ++st_.written;
  }
  void remove(const std::string& sub, const std::string& name) {
    if (!exists(sub, name)) return;
    dir(sub).remove(name);
    ++st_.removed;
  }
  bool exists(const std::string& sub, const std::string& name) const {
    std::error_code ec;
    return fs::is_regular_file(fs::path(root_) / sub / name, ec);
  }
  const OutputDir& dir(const std::string& sub) {
    if (sub.empty()) return top_;
    auto it = subs_.find(sub);
    if (it == subs_.end()) it = subs_.emplace(sub, OutputDir((fs::path(root_) / sub).string(), "--out")).first;
    return it->second;
  }

 private:
  std::string root_;
  OutputDir top_;
  std::map<std::string, OutputDir> subs_;
  SiteStats& st_;
};

struct SeriesPoint {
  const store::HistoryRun* run;
  double value;
  bool change;
};
struct Series {
  std::string label, backend, machine, slug;
  std::map<std::string, std::vector<SeriesPoint>> by_metric;  // flop_per_s, flop_per_j
};

// Every series of both metrics, with its change points marked by history's test.
std::map<std::string, Series> collect_series(store::Store& s, double threshold, store::History (&keep)[2]) {
  std::map<std::string, Series> out;
  const char* metrics[] = {"flop_per_s", "flop_per_j"};
  for (int k = 0; k < 2; ++k) {
    store::HistoryFilter f;
    f.metric = metrics[k];
    keep[k] = s.history(f);
    const auto& pts = keep[k].points;
    for (std::size_t b = 0, e = 0; b < pts.size(); b = e) {
      for (e = b; e < pts.size() && pts[e].series == pts[b].series; ++e) {
      }
      const store::HistorySeries& sr = *pts[b].series;
      const std::string key = sr.config_key + '\x1f' + sr.backend + '\x1f' + sr.machine;
      Series& x = out[key];
      x.label = sr.label, x.backend = sr.backend, x.machine = sr.machine;
      x.slug = fmt::format("{:016x}", fnv1a(key));
      std::vector<double> v;
      for (std::size_t i = b; i < e; ++i) v.push_back(pts[i].value);
      const auto marks = change_points(v, threshold);
      auto& dst = x.by_metric[metrics[k]];
      for (std::size_t i = b; i < e; ++i) dst.push_back({pts[i].run, pts[i].value, bool(marks[i - b])});
    }
  }
  return out;
}

std::string page_head(const std::string& title, const std::string& assets) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline' 'self'; "
         "style-src 'unsafe-inline'; img-src data:\">\n<title>" +
         esc(title) + "</title>\n<style>" + kHtmlCss + "</style>\n</head><body>\n" +
         (assets.empty() ? "" : "<nav><a href=\"" + assets + "index.html\">all machines and series</a></nav>\n") +
         "<h1>" + esc(title) + "</h1>\n";
}

constexpr const char* kSeriesScript = R"js(
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('flopwatt-data').textContent);
  window.flopwatt = {data: data, charts: {}};
  data.metrics.forEach(function (m, k) {
    const c = document.getElementById('chart-' + m.metric);
    if (!c || typeof Chart === 'undefined') return;
    window.flopwatt.charts[c.id] = new Chart(c, {
      type: 'line',
      data: {labels: m.points.map(function (p) { return p.started; }),
             datasets: [{label: m.title, borderColor: k ? '#ff7f0e' : '#1f77b4',
                         data: m.points.map(function (p) { return p.value * m.scale; }),
                         pointRadius: m.points.map(function (p) { return p.change ? 7 : 3; }),
                         pointBackgroundColor: m.points.map(function (p) { return p.change ? '#d62728' : '#888'; })}]},
      options: {animation: false, maintainAspectRatio: false,
                onClick: function (e, els) { if (els.length) window.location.href = m.points[els[0].index].href; },
                scales: {y: {title: {display: true, text: m.unit}}},
                plugins: {title: {display: true, text: m.title + ' over stored runs (red: change point; click a point for its run)'},
                          tooltip: {callbacks: {afterLabel: function (c) { return m.points[c.dataIndex].run_id; }}}}}
    });
  });
})();
)js";

std::string series_page(const Series& x, double threshold) {
  std::string h = page_head(x.label + " on " + x.backend + " (" + x.machine + ")", "../");
  h += fmt::format("<p>Each point is one stored run; a red point is a change point: the median of up to {} runs from "
                   "there differs by more than {}% from the median of as many runs before (the test `flopwatt "
                   "history` uses).</p>\n<div class=\"charts\">",
                   kChangeWindow, shortest(threshold * 100));
  json metrics = json::array();
  static const std::map<std::string, std::pair<const char*, const char*>> kTitles = {
      {"flop_per_s", {"FLOP/s", "GFLOP/s"}}, {"flop_per_j", {"FLOP/J", "GFLOP/J"}}};
  for (const auto& [metric, pts] : x.by_metric) {
    h += "<div class=\"chart\"><canvas id=\"chart-" + metric + "\"></canvas></div>";
    json jp = json::array();
    for (const auto& p : pts)
      jp.push_back({{"run_id", p.run->run_id}, {"started", p.run->started_utc}, {"value", p.value},
                    {"change", p.change}, {"href", "../" + site_run_page(p.run->run_id)}});
    metrics.push_back({{"metric", metric}, {"title", kTitles.at(metric).first}, {"unit", kTitles.at(metric).second},
                       {"scale", 1e-9}, {"points", jp}});
  }
  h += "</div>\n";
  for (const auto& [metric, pts] : x.by_metric) {
    h += "<h2>" + esc(kTitles.at(metric).first) + "</h2>\n<table class=\"sortable history\"><thead><tr><th>started (UTC)"
         "</th><th>run</th><th>git</th><th>" + esc(kTitles.at(metric).second) + "</th><th>change</th></tr></thead><tbody>\n";
    for (const auto& p : pts)
      h += "<tr><td>" + esc(p.run->started_utc) + "</td><td><a href=\"../" + esc(site_run_page(p.run->run_id)) + "\">" +
           esc(p.run->run_id) + "</a></td><td>" + esc(p.run->git_revision) + "</td><td class=\"n\" data-v=\"" +
           fmt::format("{}", p.value) + "\">" + fmt::format("{:.4g}", p.value * 1e-9) + "</td><td>" +
           (p.change ? "change" : "") + "</td></tr>\n";
    h += "</tbody></table>\n";
  }
  h += "<script id=\"flopwatt-data\" type=\"application/json\">" + script_json(json{{"metrics", metrics}}) +
       "</script>\n<script src=\"../assets/chart.min.js\"></script>\n<script>" + kHtmlSortScript + kSeriesScript +
       "</script>\n</body></html>\n";
  return h;
}

std::string index_page(const std::vector<store::RunSummary>& runs, const std::map<std::string, Series>& series,
                       SiteStats& st) {
  struct Machine {
    std::size_t runs = 0;
    std::string first, last;
  };
  std::map<std::string, Machine> machines;
  for (const auto& r : runs) {
    Machine& m = machines[r.machine_label.empty() ? r.machine_id : r.machine_label];
    ++m.runs;
    if (m.first.empty() || r.started_utc < m.first) m.first = r.started_utc;
    if (r.started_utc > m.last) m.last = r.started_utc;
  }
  st.machines = machines.size();
  std::string h = page_head("flopwatt results", "");
  h += "<h2>Machines</h2>\n<table class=\"sortable machines\"><thead><tr><th>machine</th><th>runs</th><th>first run"
       "</th><th>last run</th></tr></thead><tbody>\n";
  for (const auto& [name, m] : machines)
    h += "<tr><td>" + esc(name) + "</td><td class=\"n\" data-v=\"" + std::to_string(m.runs) + "\">" +
         std::to_string(m.runs) + "</td><td>" + esc(m.first) + "</td><td>" + esc(m.last) + "</td></tr>\n";
  h += "</tbody></table>\n<h2>Series</h2>\n<table class=\"sortable series\"><thead><tr><th>machine</th><th>"
       "configuration</th><th>backend</th><th>runs</th><th>last GFLOP/s</th><th>last GFLOP/J</th><th>change points"
       "</th></tr></thead><tbody>\n";
  for (const auto& [key, x] : series) {
    auto last = [&](const char* m) -> std::string {
      auto it = x.by_metric.find(m);
      if (it == x.by_metric.end() || it->second.empty()) return "<td>-</td>";
      const double v = it->second.back().value;
      return "<td class=\"n\" data-v=\"" + fmt::format("{}", v) + "\">" + fmt::format("{:.4g}", v * 1e-9) + "</td>";
    };
    std::size_t n = 0, changes = 0;
    for (const auto& [m, pts] : x.by_metric) {
      n = std::max(n, pts.size());
      for (const auto& p : pts) changes += p.change;
    }
    h += "<tr><td>" + esc(x.machine) + "</td><td><a href=\"series/" + x.slug + ".html\">" + esc(x.label) +
         "</a></td><td>" + esc(x.backend) + "</td><td class=\"n\">" + std::to_string(n) + "</td>" + last("flop_per_s") +
         last("flop_per_j") + "<td class=\"n\">" + std::to_string(changes) + "</td></tr>\n";
  }
  h += "</tbody></table>\n<h2>Runs</h2>\n<table class=\"sortable runs\"><thead><tr><th>started (UTC)</th><th>run"
       "</th><th>machine</th><th>command</th><th>rows</th><th>complete</th></tr></thead><tbody>\n";
  for (auto it = runs.rbegin(); it != runs.rend(); ++it)
    h += "<tr><td>" + esc(it->started_utc) + "</td><td><a href=\"" + esc(site_run_page(it->run_id)) + "\">" +
         esc(it->run_id) + "</a></td><td>" + esc(it->machine_label.empty() ? it->machine_id : it->machine_label) +
         "</td><td>" + esc(it->command) + "</td><td class=\"n\">" + std::to_string(it->measurements) + "</td><td>" +
         (it->complete ? "yes" : "no") + "</td></tr>\n";
  h += "</tbody></table>\n<script>" + std::string(kHtmlSortScript) + "</script>\n</body></html>\n";
  return h;
}

}  // namespace

std::string site_run_page(const std::string& run_id) {
  return "runs/" + (plain_name(run_id) ? run_id : fmt::format("run-{:016x}", fnv1a(run_id))) + ".html";
}

SiteStats build_site(store::Store& s, const SiteOptions& o, const ChartJs& chart) {
  SiteStats st;
  SiteDir site(o.out, st);
  site.put("assets", "chart.min.js", chart.source);
  const auto runs = s.list(store::ListFilter{});
  st.runs = runs.size();
  // The manifest: which run pages exist and which page generator made them.
  const std::string generator = fmt::format("run-page-{} chart.js-{}", kRunPageVersion, chart.version);
  json manifest = {{"generator", generator}, {"runs", json::object()}, {"series", json::array()}};
  json old;
  {
    std::ifstream f(fs::path(o.out) / "site.json");
    old = f ? json::parse(f, nullptr, false) : json();
    if (old.is_object() && old.value("generator", "") == generator && old.contains("runs") && old["runs"].is_object())
      manifest["runs"] = old["runs"];
  }
  // A run deleted from the store loses its page: the site shows what the store holds.
  // Only pages an earlier build recorded are removed, whatever its generator.
  std::set<std::string> in_store;
  for (const auto& r : runs) in_store.insert(r.run_id);
  if (old.is_object() && old.contains("runs") && old["runs"].is_object())
    for (const auto& [id, page] : old["runs"].items())
      if (!in_store.count(id) && page.is_string()) {
        site.remove("runs", fs::path(page.get<std::string>()).filename().string());
        manifest["runs"].erase(id);
      }
  for (const auto& r : runs) {
    const std::string page = site_run_page(r.run_id);
    const std::string name = fs::path(page).filename().string();
    if (manifest["runs"].contains(r.run_id) && site.exists("runs", name)) {
      ++st.unchanged;
      continue;
    }
    LoadedRun lr{r.run_id, r.run_id, run_from_json(json::parse(*s.run_json(r.run_id)))};
    HtmlOptions h;
    h.title = "run " + r.run_id;
    h.chartjs_href = "../assets/chart.min.js";
    h.nav_html = "<nav><a href=\"../index.html\">all machines and series</a></nav>\n";
    h.samples = [&s](const LoadedRun& x) { return s.samples(x.dir); };
    site.put("runs", name, report_html({lr}, h, chart));
    manifest["runs"][r.run_id] = page;
  }
  store::History keep[2];
  const auto series = collect_series(s, o.threshold, keep);
  st.series = series.size();
  std::set<std::string> slugs;
  for (const auto& [key, x] : series) {
    site.put("series", x.slug + ".html", series_page(x, o.threshold));
    slugs.insert(x.slug);
    manifest["series"].push_back(x.slug);
  }
  if (old.is_object() && old.contains("series") && old["series"].is_array())
    for (const auto& slug : old["series"])
      if (slug.is_string() && !slugs.count(slug.get<std::string>())) site.remove("series", slug.get<std::string>() + ".html");
  site.put("", "index.html", index_page(runs, series, st));
  site.put("", "site.json", manifest.dump(1) + "\n");
  return st;
}

}  // namespace flopwatt
