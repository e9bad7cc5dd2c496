#include "harness/analysis/html_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "harness/analysis/campaign.h"
#include "harness/analysis/grad_order_report.h"
#include "harness/analysis/html_report_assets.h"
#include "harness/output/headline_view.h"
#include "harness/output/text.h"
#include "harness/run/roofline.h"
#include "harness/store/store.h"
#include "workloads/error.h"

namespace fs = std::filesystem;

namespace flopwatt {

using nlohmann::json;

std::string html_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string script_json(const json& j) {
  // ensure_ascii turns U+2028/2029 (and all non-ASCII) into \uXXXX; the
  // three ASCII characters HTML's script parser reacts to can only be inside
  // JSON strings, where \u003c and friends mean the same.
  const std::string d = j.dump(-1, ' ', true, json::error_handler_t::replace);
  std::string o;
  o.reserve(d.size());
  for (char c : d) {
    if (c == '<') o += "\\u003c";
    else if (c == '>') o += "\\u003e";
    else if (c == '&') o += "\\u0026";
    else o += c;
  }
  return o;
}

namespace {
// The cells of one markdown table row; "\\|" is a pipe inside a cell.
std::vector<std::string> md_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') cur += line[++i];
    else if (line[i] == '|') cells.push_back(cur), cur.clear();
    else cur += line[i];
  }
  for (auto& c : cells) {
    c.erase(0, c.find_first_not_of(' '));
    c.erase(c.find_last_not_of(' ') + 1);
  }
  return cells;
}
}  // namespace

std::string markdown_tables_html(const std::string& md) {
  std::string h, line;
  std::istringstream in(md);
  bool in_table = false, head = false;
  while (std::getline(in, line)) {
    const bool row = !line.empty() && line[0] == '|';
    if (in_table && !row) h += "</tbody></table>\n", in_table = false;
    if (row) {
      const auto cells = md_cells(line);
      if (!in_table) {
        h += "<table class=\"sortable\"><thead><tr>";
        for (const auto& c : cells) h += "<th>" + html_escape(c) + "</th>";
        h += "</tr></thead><tbody>\n";
        in_table = head = true;
        continue;
      }
      if (head && line.find_first_not_of("|-: ") == std::string::npos) continue;  // the separator row
      head = false;
      h += "<tr>";
      for (const auto& c : cells) h += "<td>" + html_escape(c) + "</td>";
      h += "</tr>\n";
    } else if (line.rfind("### ", 0) == 0) {
      h += "<h4>" + html_escape(line.substr(4)) + "</h4>\n";
    } else if (line.rfind("## ", 0) == 0) {
      h += "<h3>" + html_escape(line.substr(3)) + "</h3>\n";
    } else if (!line.empty()) {
      h += "<p>" + html_escape(line) + "</p>\n";
    }
  }
  if (in_table) h += "</tbody></table>\n";
  return h;
}

ChartJs load_chartjs() {
  const char* env = std::getenv("FLOPWATT_CHARTJS");
  ChartJs c;
  c.path = env && *env ? env : kChartJsPath;
  const std::string fix = "install Debian's libjs-chart.js (apt-get install libjs-chart.js), or point FLOPWATT_CHARTJS "
                          "at Chart.js 3's chart.min.js";
  std::error_code ec;
  if (!fs::is_regular_file(c.path, ec)) throw InputError(c.path, "Chart.js not found (the HTML report's charts)", fix);
  std::ifstream f(c.path, std::ios::binary);
  c.source.assign(std::istreambuf_iterator<char>(f), {});
  if (!f.good() && !f.eof()) throw InputError(c.path, "cannot read Chart.js", fix);
  std::smatch m;
  const std::string head = c.source.substr(0, 400);
  if (!std::regex_search(head, m, std::regex(R"(Chart\.js v(\d+\.\d+\.\d+))")))
    throw InputError(c.path, "not Chart.js (no \"Chart.js vX.Y.Z\" banner)", fix);
  c.version = m[1];
  c.licence = std::regex_search(head, m, std::regex(R"(Released under the (\w+) License)")) ? m[1].str() : "?";
  // Inside <script> only "</script" and "<!--" change the parse; neither is
  // in 3.9.1, but a string that held one would mean the same escaped.
  for (const std::string bad : {"</script", "</SCRIPT", "<!--"})
    for (std::size_t p; (p = c.source.find(bad)) != std::string::npos;) c.source.insert(p + 1, "\\");
  return c;
}

namespace {

std::string esc(std::string_view s) { return html_escape(s); }
std::string num(double v) { return fmt::format("{}", v); }  // shortest round trip: data-v holds the stored figure
std::string g3(double v) { return fmt::format("{:.3g}", v); }
std::string giga(double v) { return fmt::format("{:.3g}", v * 1e-9); }

std::string ctx_text(const json& c, const char* key) {
  if (!c.contains(key) || c[key].is_null()) return "?";
  return c[key].is_string() ? c[key].get<std::string>() : c[key].dump();
}

std::string supply_text(const Run& run) {
  const json& c = run.context;
  std::string s = run_supply_state(run).value_or("no power supply class (counted as mains)");
  if (c.contains("battery_percent") && c["battery_percent"].is_number())
    s += fmt::format(", battery {:.0f}%", c["battery_percent"].get<double>());
  return s;
}

std::optional<double> headline_fpj(const Measurement& m, const std::optional<std::string>& src) {
  if (!src) return std::nullopt;
  auto it = m.energy.find(*src);
  return it == m.energy.end() ? std::nullopt : it->second.flop_per_j;
}

std::size_t index_in(const Run& run, const Measurement* m) { return std::size_t(m - run.measurements.data()); }

std::string td_num(double v, const std::string& text) {
  return "<td class=\"n\" data-v=\"" + num(v) + "\">" + esc(text) + "</td>";
}
std::string td(const std::string& text) { return "<td>" + esc(text) + "</td>"; }

std::string table_open(const std::string& cls, const std::vector<std::string>& heads) {
  std::string h = "<table class=\"sortable " + cls + "\"><thead><tr>";
  for (const auto& x : heads) h += "<th>" + esc(x) + "</th>";
  return h + "</tr></thead><tbody>\n";
}

// -- context ---------------------------------------------------------------

void runs_table(std::string& h, const std::vector<LoadedRun>& runs, const ReportOptions& o) {
  h += "<h2>Runs</h2>\n" + table_open("runs", {"#", "run", "run id", "complete", "CPU", "threads", "supply",
                                                "FLOP/J from"});
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    std::set<std::string> used;
    for (const auto& m : r.run.measurements)
      if (comparable(m))
        if (auto s = headline_of(r.run, m).source) used.insert(*s);
    std::string used_text;
    for (const auto& u : used) used_text += (used_text.empty() ? "" : ", ") + u;
    h += "<tr>" + td_num(double(i + 1), std::to_string(i + 1)) + "<td><a href=\"#run-" + std::to_string(i + 1) +
         "\">" + esc(r.label) + "</a>" + (i == o.baseline && runs.size() > 1 ? " (baseline)" : "") + "</td>" +
         "<td class=\"run-id\">" + esc(r.run.run_id) + "</td>" + td(r.run.complete ? "yes" : "NO") +
         td(ctx_text(r.run.context, "cpu")) + td(ctx_text(r.run.context, "threads")) + td(supply_text(r.run)) +
         td(used_text.empty() ? "none" : used_text) + "</tr>\n";
  }
  h += "</tbody></table>\n";
}

void machine_list(std::string& h, const Run& run) {
  static const std::pair<const char*, const char*> kFields[] = {
      {"cpu", "CPU"},          {"arch", "architecture"},   {"kernel", "kernel"},
      {"hypervisor", "hypervisor"}, {"threads", "threads"}, {"scaling_driver", "scaling driver"},
      {"governor", "governor"}, {"epp", "EPP"},           {"platform_profile", "platform profile"},
      {"compiler", "compiler"}, {"git_revision", "flopwatt git revision"}, {"started_utc", "started (UTC)"}};
  h += "<dl class=\"machine\">";
  for (const auto& [k, name] : kFields)
    if (run.context.contains(k) && !run.context[k].is_null())
      h += "<dt>" + esc(name) + "</dt><dd>" + esc(ctx_text(run.context, k)) + "</dd>";
  h += "<dt>flopwatt</dt><dd>" + esc(run.flopwatt_version) + "</dd>";
  h += "<dt>supply at start</dt><dd>" + esc(supply_text(run)) + "</dd></dl>\n";
  const json& ch = run.context.value("supply_changes", json::array());
  if (ch.is_array() && !ch.empty()) {
    h += "<p>Supply changes during the run:</p><ul class=\"supply-changes\">";
    for (const auto& c : ch)
      h += "<li>" + esc(fmt::format("{}: {} → {}", ctx_text(c, "what"), ctx_text(c, "from"), ctx_text(c, "to"))) + "</li>";
    h += "</ul>\n";
  }
}

void sources_table(std::string& h, const Run& run) {
  h += "<h4>Power sources</h4>\n" +
       table_open("sources", {"source", "domain", "kind", "available", "update interval (s)", "reason / note", "fix"});
  for (const auto& s : run.power_sources) {
    h += "<tr>" + td(s.id) + td(s.domain) + td(s.kind + (s.simulated ? " (simulated)" : "")) +
         td(s.available ? "yes" : "no") +
         (s.update_interval_s ? td_num(*s.update_interval_s, g3(*s.update_interval_s)) : td("-")) +
         td(s.reason.value_or(s.note.value_or(""))) + td(s.fix.value_or("")) + "</tr>\n";
  }
  h += "</tbody></table>\n";
  if (!run.idle.empty()) {
    h += "<h4>Idle baseline</h4>\n" + table_open("idle", {"source", "power (W)", "sd (W)", "duration (s)", "supply"});
    for (const auto& [id, f] : run.idle)
      h += "<tr>" + td(id) + td_num(f.power_w, g3(f.power_w)) + (f.sd_w ? td_num(*f.sd_w, g3(*f.sd_w)) : td("-")) +
           td_num(f.duration_s, g3(f.duration_s)) + td(f.supply.value_or("?")) + "</tr>\n";
    h += "</tbody></table>\n";
  }
}

// Why each row's FLOP/J comes from where it does, as the run judged it.
void headline_reasons(std::string& h, const Run& run) {
  std::map<std::pair<std::string, std::string>, int> why;
  for (const auto& m : run.measurements)
    if (comparable(m)) {
      const HeadlineView v = headline_of(run, m);
      ++why[{v.source.value_or("none"), v.why}];
    }
  if (why.empty()) return;
  h += "<h4>Why each row's FLOP/J comes from its source</h4>\n<ul class=\"headline-why\">";
  for (const auto& [k, n] : why)
    h += "<li><b>" + esc(k.first) + "</b> (" + std::to_string(n) + " row" + (n == 1 ? "" : "s") + "): " +
         esc(k.second.empty() ? "(no reason recorded)" : k.second) + "</li>";
  h += "</ul>\n";
}

// -- tables ------------------------------------------------------------------

std::string rate_text(const Measurement& x) {
  if (x.reps < 2 || x.rep_times_s.size() == 1) return giga(x.flop_per_s) + " (1 rep)";
  return fmt::format("{} [{}-{}]", giga(x.flop_per_s), giga(rate_at(x, x.time_s.p90)), giga(rate_at(x, x.time_s.p10)));
}
bool has_spread(const Measurement& x) { return x.reps >= 2 && x.rep_times_s.size() != 1; }

// One run: each configuration's backends against its baseline backend, as the
// markdown report's single-run table, with the judged source and its reason.
void run_table(std::string& h, std::size_t ri, const LoadedRun& lr, const std::vector<ReportRow>& rows,
               const std::string& w) {
  const Run& run = lr.run;
  std::map<std::string, std::vector<std::string>> backends_of;
  std::map<std::pair<std::string, std::string>, const Measurement*> by;
  for (const ReportRow& row : rows)
    if (row.per_run[ri]) {
      backends_of[row.key].push_back(row.backend);
      by[{row.key, row.backend}] = row.per_run[ri];
    }
  h += table_open("measurements", {"configuration", "backend", "GFLOP/s [p10-p90]", "speedup [95% CI]", "GFLOP/J",
                                   "energy source", "confidence", "% of roof", "verified"});
  for (const ReportRow& row : rows) {
    if (row.first->workload != w) continue;
    const Measurement* x = row.per_run[ri];
    if (!x && row.skipped[ri].empty()) continue;
    const std::string backend = row.backend + (row.first->simulated ? " (sim)" : "");
    if (!x) {
      h += "<tr class=\"skipped\">" + td(row.label) + td(backend) + "<td colspan=\"7\">skipped: " +
           esc(row.skipped[ri]) + "</td></tr>\n";
      continue;
    }
    h += fmt::format("<tr data-run=\"{}\" data-m=\"{}\">", ri, index_in(run, x)) + td(row.label) + td(backend) +
         td_num(x->flop_per_s, rate_text(*x));
    const std::string bb = baseline_backend(backends_of[row.key]);
    if (bb == row.backend || backends_of[row.key].size() < 2) {
      h += td("(baseline)");
    } else {
      const Measurement* base = by[{row.key, bb}];
      const auto rr = rate_ratio(*x, *base);
      h += !rr ? td("-")
               : td_num(rr->ratio, has_spread(*x) && has_spread(*base)
                                       ? fmt::format("{} [{}-{}] vs {}", g3(rr->ratio), g3(rr->ci95[0]),
                                                     g3(rr->ci95[1]), bb)
                                       : fmt::format("{} vs {} (1 rep: no interval)", g3(rr->ratio), bb));
    }
    const HeadlineView hv = headline_of(run, *x);
    const auto v = headline_fpj(*x, hv.source);
    h += v ? "<td class=\"n fpj\" data-v=\"" + num(*v) + "\">" + esc(giga(*v)) + "</td>"
           : std::string("<td class=\"fpj\" data-v=\"\">-</td>");
    h += "<td title=\"" + esc(hv.why) + "\">" + esc(hv.source.value_or("-")) + "</td>";
    h += td(hv.source ? x->energy.at(*hv.source).confidence : "-");
    h += x->fraction_of_roof ? td_num(*x->fraction_of_roof, fmt::format("{:.0f}%", 100 * *x->fraction_of_roof))
                             : td("-");
    h += td(x->verified ? (*x->verified ? "yes" : "FAILED") : "-") + "</tr>\n";
  }
  h += "</tbody></table>\n";
}

// Several runs: one row per configuration and backend, rates and FLOP/J side
// by side with the ratios to the baseline run (FLOP/J ratios only from a
// source both measured: shared_headline).
void compare_table(std::string& h, const std::vector<LoadedRun>& runs, const std::vector<ReportRow>& rows,
                   const ReportOptions& o, const std::string& w) {
  std::vector<std::string> heads = {"configuration", "backend"};
  const std::string b1 = std::to_string(o.baseline + 1);
  for (std::size_t r = 0; r < runs.size(); ++r) heads.push_back(std::to_string(r + 1) + ": GFLOP/s");
  for (std::size_t r = 0; r < runs.size(); ++r)
    if (r != o.baseline) heads.push_back(std::to_string(r + 1) + "/" + b1 + " FLOP/s");
  for (std::size_t r = 0; r < runs.size(); ++r) heads.push_back(std::to_string(r + 1) + ": GFLOP/J");
  for (std::size_t r = 0; r < runs.size(); ++r)
    if (r != o.baseline) heads.push_back(std::to_string(r + 1) + "/" + b1 + " FLOP/J");
  h += table_open("comparison", heads);
  for (const ReportRow& row : rows) {
    if (row.first->workload != w) continue;
    h += "<tr>" + td(row.label) + td(row.backend);
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const Measurement* x = row.per_run[r];
      h += x ? td_num(x->flop_per_s, rate_text(*x)) : td(row.skipped[r].empty() ? "-" : "skipped");
    }
    const Measurement* base = row.per_run[o.baseline];
    for (std::size_t r = 0; r < runs.size(); ++r) {
      if (r == o.baseline) continue;
      const auto rr = row.per_run[r] && base ? rate_ratio(*row.per_run[r], *base) : std::nullopt;
      h += rr ? td_num(rr->ratio, fmt::format("{} [{}-{}]", g3(rr->ratio), g3(rr->ci95[0]), g3(rr->ci95[1])))
              : td("-");
    }
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const Measurement* x = row.per_run[r];
      const auto hv = x ? headline_of(runs[r].run, *x) : HeadlineView{};
      const auto v = x ? headline_fpj(*x, hv.source) : std::nullopt;
      h += v ? fmt::format("<td class=\"n fpj\" data-run=\"{}\" data-m=\"{}\" data-v=\"{}\" title=\"{}\">{}</td>", r,
                           index_in(runs[r].run, x), num(*v), esc(*hv.source), esc(giga(*v)))
             : td("-");
    }
    for (std::size_t r = 0; r < runs.size(); ++r) {
      if (r == o.baseline) continue;
      const Measurement* x = row.per_run[r];
      const auto shared = x && base ? shared_headline(runs[r].run, *x, runs[o.baseline].run, *base) : std::nullopt;
      const auto a = x ? headline_fpj(*x, shared) : std::nullopt;
      const auto b = base ? headline_fpj(*base, shared) : std::nullopt;
      h += a && b && *b > 0 ? "<td class=\"n\" data-v=\"" + num(*a / *b) + "\" title=\"from " + esc(*shared) + "\">" +
                                  esc(g3(*a / *b)) + "</td>"
                            : td("-");
    }
    h += "</tr>\n";
  }
  h += "</tbody></table>\n";
}

// -- chart data ----------------------------------------------------------------

// Power per source over the run: a counter (J) differenced between
// consecutive samples, a gauge (W) as read. A counter that went backwards
// (wrapped or reset) leaves a gap rather than a negative power.
constexpr std::size_t kMaxTracePoints = 5000;

json trace_of(const LoadedRun& lr, const std::vector<store::SampleRow>& samples) {
  json t = {{"sources", json::array()}, {"windows", json::array()}, {"supply", json::array()}};
  std::map<std::string, std::pair<std::string, std::vector<std::pair<std::int64_t, double>>>> by;
  std::vector<std::string> order;
  for (const auto& s : samples) {
    if (!s.value || !s.unit) continue;
    try {
      auto& e = by[s.source_id];
      if (e.second.empty()) order.push_back(s.source_id), e.first = *s.unit;
      e.second.emplace_back(std::stoll(s.t_ns), std::stod(*s.value));
    } catch (const std::exception&) {  // a damaged line plots as nothing
    }
  }
  std::int64_t t0 = 0;
  bool any = false;
  for (const auto& [id, e] : by)
    for (const auto& p : e.second) t0 = any ? std::min(t0, p.first) : p.first, any = true;
  for (const auto& m : lr.run.measurements)
    if (m.window_ns && !m.skipped) t0 = any ? std::min(t0, (*m.window_ns)[0]) : (*m.window_ns)[0], any = true;
  t["t0_ns"] = t0;
  auto sec = [t0](std::int64_t t) { return double(t - t0) * 1e-9; };
  for (const auto& id : order) {
    const auto& [unit, pts] = by[id];
    json xs = json::array(), ys = json::array();
    if (unit == "J") {
      for (std::size_t i = 1; i < pts.size(); ++i) {
        const double dt = double(pts[i].first - pts[i - 1].first) * 1e-9, de = pts[i].second - pts[i - 1].second;
        xs.push_back(sec(pts[i].first));
        ys.push_back(dt > 0 && de >= 0 ? json(de / dt) : json(nullptr));
      }
    } else if (unit == "W") {
      for (const auto& p : pts) xs.push_back(sec(p.first)), ys.push_back(p.second);
    } else {
      continue;  // a unit the trace does not draw as power
    }
    const std::size_t stride = (xs.size() + kMaxTracePoints - 1) / kMaxTracePoints;
    json x2 = json::array(), y2 = json::array();
    for (std::size_t i = 0; i < xs.size(); i += std::max<std::size_t>(stride, 1)) x2.push_back(xs[i]), y2.push_back(ys[i]);
    t["sources"].push_back({{"id", id}, {"unit", unit}, {"samples", pts.size()}, {"x", x2}, {"y", y2}});
  }
  for (const auto& m : lr.run.measurements)
    if (m.window_ns && !m.skipped)
      t["windows"].push_back({{"t0", sec((*m.window_ns)[0])}, {"t1", sec((*m.window_ns)[1])},
                              {"label", config_label(m) + " " + m.backend},
                              {"supply_changed", json_or_null(m.supply_changed)}});
  for (const auto& c : lr.run.context.value("supply_changes", json::array()))
    if (c.contains("t_ns") && c["t_ns"].is_number())
      t["supply"].push_back({{"t", sec(c["t_ns"].get<std::int64_t>())},
                             {"label", ctx_text(c, "what") + ": " + ctx_text(c, "to")}});
  return t;
}

// FLOP/s (median, p10-p90) and judged FLOP/J per configuration and backend.
json rates_of(const LoadedRun& lr) {
  std::vector<std::string> labels, backends;
  std::map<std::pair<std::string, std::string>, const Measurement*> at;
  for (const auto& m : lr.run.measurements) {
    if (!comparable(m)) continue;
    const std::string l = config_label(m);
    if (std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
    if (std::find(backends.begin(), backends.end(), m.backend) == backends.end()) backends.push_back(m.backend);
    at.emplace(std::make_pair(l, m.backend), &m);
  }
  json ds = json::array();
  for (const auto& b : backends) {
    json y = json::array(), lo = json::array(), hi = json::array(), fpj = json::array(), src = json::array(),
         low = json::array();
    for (const auto& l : labels) {
      auto it = at.find({l, b});
      const Measurement* m = it == at.end() ? nullptr : it->second;
      y.push_back(m ? json(m->flop_per_s) : json(nullptr));
      lo.push_back(m && has_spread(*m) ? json(rate_at(*m, m->time_s.p90)) : json(nullptr));
      hi.push_back(m && has_spread(*m) ? json(rate_at(*m, m->time_s.p10)) : json(nullptr));
      const auto hv = m ? headline_of(lr.run, *m) : HeadlineView{};
      const auto v = m ? headline_fpj(*m, hv.source) : std::nullopt;
      fpj.push_back(json_or_null(v));
      src.push_back(v ? json(*hv.source) : json(nullptr));
      low.push_back(v && m->energy.at(*hv.source).confidence == "low");
    }
    ds.push_back({{"backend", b}, {"flop_per_s", y}, {"lo", lo}, {"hi", hi}, {"flop_per_j", fpj},
                  {"flop_per_j_source", src}, {"low_confidence", low}});
  }
  return {{"labels", labels}, {"backends", ds}};
}

json roofline_of(const LoadedRun& lr) {
  json pts = json::array();
  for (const auto& m : lr.run.measurements)
    if (comparable(m) && m.intensity && *m.intensity > 0 && m.roof_flop_per_s)
      pts.push_back({{"label", config_label(m) + " " + m.backend}, {"backend", m.backend},
                     {"intensity", *m.intensity}, {"flop_per_s", m.flop_per_s}, {"roof", *m.roof_flop_per_s},
                     {"bound", json_or_null(m.roof_bound)}, {"ceiling", json_or_null(m.roof_ceiling)}});
  return pts;
}

// Each row with an intensity and a judged FLOP/J, and the energy roofline's
// ceiling there when a fit speaks for the row (energy_ceiling_of).
json energy_roofline_of(const LoadedRun& lr) {
  json pts = json::array();
  for (const auto& m : lr.run.measurements) {
    if (!comparable(m) || !m.intensity || !(*m.intensity > 0)) continue;
    const HeadlineView hv = headline_of(lr.run, m);
    const auto v = headline_fpj(m, hv.source);
    if (!v) continue;
    pts.push_back({{"label", config_label(m) + " " + m.backend}, {"backend", m.backend}, {"intensity", *m.intensity},
                   {"flop_per_j", *v}, {"source", *hv.source}, {"ceiling", json_or_null(energy_ceiling_of(lr.run, m))}});
  }
  return pts;
}

// The two supplies' runs, compared as a campaign compares its phases.
json mains_battery_of(const std::vector<LoadedRun>& runs) {
  std::vector<LoadedRun> mains, battery;
  for (const auto& r : runs) {
    const auto s = run_supply_state(r.run);
    if (s == "mains") mains.push_back(r);
    else if (s == "battery") battery.push_back(r);
  }
  if (mains.empty() || battery.empty()) return nullptr;
  return compare_mains_battery(mains, battery, ComparisonOptions{});
}

std::vector<store::SampleRow> default_samples(const LoadedRun& r) {
  std::ifstream f(fs::path(r.dir) / "samples.csv", std::ios::binary);
  if (!f) return {};
  return store::parse_samples_csv(std::string(std::istreambuf_iterator<char>(f), {}));
}

void mains_battery_table(std::string& h, const json& c) {
  auto cell = [](const json& v, double scale) {
    return v.is_number() ? td_num(v.get<double>(), g3(v.get<double>() * scale)) : td("-");
  };
  auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : std::string("-"); };
  auto at = [](const json& r, const char* a, const char* b) -> json {
    return r.contains(a) && r[a].is_object() && r[a].contains(b) ? r[a][b] : json();
  };
  h += "<h2 id=\"mains-battery\">Mains vs battery</h2>\n<div class=\"charts\"><div class=\"chart\"><canvas "
       "id=\"chart-mvb-fpj\"></canvas></div><div class=\"chart\"><canvas id=\"chart-mvb-fps\"></canvas></div></div>\n" +
       table_open("mains-battery", {"configuration", "backend", "mains GFLOP/s", "battery GFLOP/s", "mains/battery FLOP/s",
                                    "mains GFLOP/J", "battery GFLOP/J", "mains/battery FLOP/J", "FLOP/J sources"});
  for (const auto& r : c.at("rows")) {
    h += "<tr>" + td(r.value("label", "")) + td(r.value("backend", "") + (r.value("simulated", false) ? " (sim)" : "")) +
         cell(at(r, "mains", "flop_per_s"), 1e-9) + cell(at(r, "battery", "flop_per_s"), 1e-9) +
         cell(at(r, "mains_over_battery", "flop_per_s"), 1) + cell(at(r, "mains", "flop_per_j"), 1e-9) +
         cell(at(r, "battery", "flop_per_j"), 1e-9) + cell(at(r, "mains_over_battery", "flop_per_j"), 1) +
         td(text(at(r, "mains", "energy_source")) + " / " + text(at(r, "battery", "energy_source"))) +
         "</tr>\n";
  }
  h += "</tbody></table>\n";
  if (c.contains("method") && c["method"].is_object()) {
    h += "<dl class=\"method\">";
    for (const auto& [k, v] : c["method"].items())
      h += "<dt>" + esc(k) + "</dt><dd>" + esc(v.is_string() ? v.get<std::string>() : v.dump()) + "</dd>";
    h += "</dl>\n";
  }
}

// The study's figures as `report --paper` writes them in markdown, and a chart of each
// figure's range in the paper beside the range here.
void paper_section(std::string& h, const json& f) {
  h += "<section class=\"paper\" id=\"paper\">\n<h2>Rösti &amp; Franz (2025) side by side</h2>\n"
       "<div class=\"charts\"><div class=\"chart\"><canvas id=\"chart-paper\"></canvas></div></div>\n" +
       markdown_tables_html(paper_markdown(f));
  if (f.contains("assumed_mains")) h += "<p>" + esc(f["assumed_mains"].get<std::string>()) + ".</p>\n";
  h += "<p>" + esc(f.value("reference", "")) + "</p>\n</section>\n";
}

}  // namespace

json html_chart_data(const std::vector<LoadedRun>& runs, const HtmlOptions& o) {
  json d = {{"runs", json::array()}};
  for (const auto& r : runs) {
    d["runs"].push_back({{"label", r.label}, {"run_id", r.run.run_id},
                         {"trace", trace_of(r, o.samples ? o.samples(r) : default_samples(r))},
                         {"rates", rates_of(r)}, {"roofline", roofline_of(r)},
                         {"energy_roofline", energy_roofline_of(r)}});
  }
  d["mains_battery"] = mains_battery_of(runs);
  d["paper"] = o.paper ? paper_report(runs) : json(nullptr);
  return d;
}

std::string report_html(const std::vector<LoadedRun>& runs, const HtmlOptions& o, const ChartJs& chart) {
  const json data = html_chart_data(runs, o);
  std::string h;
  h.reserve(64 * 1024 + chart.source.size());
  // The policy is the offline promise: no request leaves the page (no
  // connect-src, no remote script, image or font).
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'" +
       std::string(o.chartjs_href.empty() ? "" : " 'self'") +
       "; style-src 'unsafe-inline'; img-src data:\">\n<meta name=\"viewport\" content=\"width=device-width\">\n<title>" +
       esc(o.title) + "</title>\n<style>" + kHtmlCss + "</style>\n</head><body>\n" + o.nav_html + "<h1>" +
       esc(o.title) + "</h1>\n";
  h += "<p class=\"about\">Generated by flopwatt " + esc(runs.empty() ? "" : runs[0].run.flopwatt_version) +
       ". Each row's FLOP/J is from the source the run judged for that row's window (hover a source for why). "
       "GFLOP/s at the median repetition time, [p10-p90 of the repetitions]. Charts: Chart.js " +
       esc(chart.version) + " (" + esc(chart.licence) + " licence), " +
       (o.chartjs_href.empty() ? "inlined" : "from " + esc(o.chartjs_href)) + ". Click a column heading to sort.</p>\n";
  runs_table(h, runs, o.report);
  const auto rows = report_rows(runs, o.report.across_backends && runs.size() > 1);
  std::vector<std::string> workloads;
  for (const auto& row : rows)
    if (std::find(workloads.begin(), workloads.end(), row.first->workload) == workloads.end())
      workloads.push_back(row.first->workload);
  if (!data["paper"].is_null()) paper_section(h, data["paper"]);
  if (!data["mains_battery"].is_null()) mains_battery_table(h, data["mains_battery"]);
  if (runs.size() > 1) {
    h += "<h2>Side by side</h2>\n<p>Ratios: run / baseline (" + esc(runs[o.report.baseline].label) +
         ") at the medians, [from both medians' 95% CIs, worst-case]; the FLOP/J ratio only from a source both runs "
         "measured (hover it).</p>\n";
    for (const auto& w : workloads) {
      h += "<h3>" + esc(w) + "</h3>\n";
      compare_table(h, runs, rows, o.report, w);
    }
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    h += fmt::format("<section class=\"run\" id=\"run-{}\" data-run=\"{}\">\n<h2>{}. ", i + 1, i, i + 1) +
         esc(r.label) + "</h2>\n<p>run id <code class=\"run-id\">" + esc(r.run.run_id) + "</code>" +
         (r.run.complete ? "" : " <b>(incomplete: interrupted)</b>") + "</p>\n";
    machine_list(h, r.run);
    headline_reasons(h, r.run);
    h += "<div class=\"charts\">";
    for (const char* kind : {"trace", "rate", "fpj", "roof", "eroof"})
      h += fmt::format("<div class=\"chart\"><canvas id=\"chart-{}-{}\"></canvas></div>", kind, i);
    h += "</div>\n";
    for (const auto& w : workloads) {
      h += "<h3>" + esc(w) + "</h3>\n";
      run_table(h, i, r, rows, w);
    }
    sources_table(h, r.run);
    h += "</section>\n";
  }
  if (rows.empty()) h += "<p>No comparable measurements.</p>\n";
  if (const std::string go = grad_order_markdown(runs); !go.empty())
    h += "<section class=\"grad-order\">\n<h2>Gradient order</h2>\n" + markdown_tables_html(go) + "</section>\n";
  h += "<script id=\"flopwatt-data\" type=\"application/json\">" + script_json(data) + "</script>\n";
  h += o.chartjs_href.empty() ? "<script>/* Chart.js " + chart.version + ", " + chart.licence +
                                    " licence (Debian's libjs-chart.js) */\n" + chart.source + "\n</script>\n"
                              : "<script src=\"" + esc(o.chartjs_href) + "\"></script>\n";
  h += std::string("<script>") + kHtmlSortScript + kHtmlScript + "</script>\n</body></html>\n";
  return h;
}

}  // namespace flopwatt
