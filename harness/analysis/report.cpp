#include "harness/analysis/report.h"

#include <fmt/core.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "harness/analysis/grad_order_report.h"
#include "harness/output/csv_writer.h"
#include "harness/output/headline_view.h"
#include "harness/output/json_text.h"
#include "harness/output/metrics.h"
#include "harness/output/text.h"
#include "workloads/error.h"

namespace fs = std::filesystem;

namespace flopwatt {

using nlohmann::json;

namespace {

const char* const kRunFix = "pass a directory written by `flopwatt run ...` or `flopwatt campaign ...`";

std::optional<double> fpj(const Measurement& m, const std::optional<std::string>& src) {
  if (!src) return std::nullopt;
  auto it = m.energy.find(*src);
  if (it == m.energy.end()) return std::nullopt;
  return it->second.flop_per_j;
}


std::string g3(double v) { return fmt::format("{:.3g}", v); }
std::string giga(double v) { return fmt::format("{:.3g}", v * 1e-9); }

// GFLOP/s at the median with the p10-p90 spread of the repetitions; a row of
// one repetition has no spread and says so instead of showing [x-x].
std::string rate_with_spread(const Measurement& x) {
  if (x.reps < 2 || x.rep_times_s.size() == 1) return giga(x.flop_per_s) + " (1 rep)";
  return fmt::format("{} [{}-{}]", giga(x.flop_per_s), giga(rate_at(x, x.time_s.p90)), giga(rate_at(x, x.time_s.p10)));
}

bool has_spread(const Measurement& x) { return x.reps >= 2 && x.rep_times_s.size() != 1; }

using Row = ReportRow;

std::vector<Row> build_rows(const std::vector<LoadedRun>& runs, bool across_backends) {
  std::vector<Row> rows;
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    for (const auto& m : runs[r].run.measurements) {
      const bool ok = comparable(m);
      if (!ok && !m.skipped) continue;
      const auto k = std::make_pair(config_key(m), across_backends ? std::string() : m.backend);
      auto it = index.find(k);
      if (it == index.end()) {
        Row row;
        row.key = k.first;
        row.backend = k.second;
        row.first = &m;
        row.per_run.assign(runs.size(), nullptr);
        row.skipped.assign(runs.size(), "");
        it = index.emplace(k, rows.size()).first;
        rows.push_back(std::move(row));
      }
      Row& row = rows[it->second];
      if (across_backends && (ok || m.skipped) && !row.per_run[r] && row.skipped[r].empty() &&
          ("," + row.backend + ",").find("," + m.backend + ",") == std::string::npos)
        row.backend += (row.backend.empty() ? "" : ",") + m.backend;
      if (ok && !row.per_run[r]) {
        row.per_run[r] = &m;
        if (row.first->skipped) row.first = &m;
      } else if (!ok && !row.per_run[r]) {
        row.skipped[r] = *m.skipped;
      }
    }
  }
  // Rows the label alone does not tell apart (the same GEMM at 1 and 2
  // threads) name their thread counts.
  std::map<std::pair<std::string, std::string>, int> same;
  for (Row& row : rows) ++same[{config_label(*row.first), row.backend}];
  for (Row& row : rows) {
    row.label = config_label(*row.first);
    if (same[{row.label, row.backend}] > 1 && row.first->threads)
      row.label += fmt::format(" ({} threads)", *row.first->threads);
  }
  return rows;
}

std::string power_text(const LoadedRun& r) {
  const json& c = r.run.context;
  std::string s;
  if (c.contains("ac_online") && c["ac_online"].is_boolean()) s = c["ac_online"].get<bool>() ? "mains" : "battery";
  if (c.contains("battery_percent") && c["battery_percent"].is_number())
    s += (s.empty() ? "" : ", ") + fmt::format("battery {:.0f}%", c["battery_percent"].get<double>());
  return s.empty() ? "?" : s;
}

std::string context_text(const json& c, const char* key) {
  return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : "?";
}

// The sources this run's FLOP/J figures are read from (not always the headline:
// on mains a battery gauge is skipped).
std::string used_sources(const Run& run) {
  std::set<std::string> ids;
  for (const auto& m : run.measurements)
    if (comparable(m))
      if (auto s = headline_of(run, m).source) ids.insert(*s);
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out.empty() ? "none" : out;
}

std::string md_escape(std::string s) {
  std::string o;
  for (char ch : s) {
    if (ch == '|') o += '\\';
    o += ch;
  }
  return o;
}

}  // namespace

namespace {
// An entry of that name exists (a dangling or looping link too), without throwing.
bool entry_exists(const fs::path& p) {
  std::error_code ec;
  return fs::symlink_status(p, ec).type() != fs::file_type::not_found && !ec;
}

// nlohmann's text without its "[json.exception.type_error.302] " prefix: the
// field and the type it found are the useful part.
std::string json_reason(const json::exception& e) {
  std::string what = e.what();
  if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
  return what;
}
}  // namespace

namespace {
// The whole file: parsing text in memory is twice as fast as parsing a stream.
bool read_whole(const std::string& path, std::string& text) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return false;
  text = std::move(ss).str();
  return true;
}

}  // namespace

std::string read_run_text(const std::string& path) {
  // stat first: a directory or a link loop named run.json opens as an ifstream
  // that fails later with a libstdc++ message (or an uncaught filesystem_error).
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError(path, std::string("cannot read: ") + std::strerror(errno), kRunFix);
  if (!S_ISREG(st.st_mode)) throw InputError(path, "not a regular file", kRunFix);
  std::string text;
  if (!read_whole(path, text)) throw InputError(path, "cannot read", kRunFix);
  return text;
}

Run run_from_text(const std::string& path, const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(path, fmt::format("not valid JSON at byte {}", e.byte),
                     "the file was cut off or edited; re-run the measurement");
  }
  if (!j.is_object() || !j.contains("schema_version"))
    throw InputError(path, "malformed run.json: no schema_version", kRunFix);
  if (!j["schema_version"].is_number_integer() || j["schema_version"].get<int>() < 1 ||
      j["schema_version"].get<int>() > 2)
    throw InputError(path, "unsupported schema_version " + j["schema_version"].dump(),
                     "this flopwatt reads schema_version 1 and 2; use the flopwatt that wrote the run");
  if (!j.contains("measurements") || !j["measurements"].is_array())
    throw InputError(path, "malformed run.json: measurements is not an array", kRunFix);
  try {
    return run_from_json(j);
  } catch (const json::exception& e) {
    throw InputError(path, "malformed run.json: " + json_reason(e), kRunFix);
  }
}

Run load_run_file(const std::string& path) { return run_from_text(path, read_run_text(path)); }

std::vector<LoadedRun> load_runs(const std::string& dir) {
  const fs::path d(dir);
  std::error_code ec;
  if (!fs::is_directory(d, ec)) throw InputError(dir, "not a directory", kRunFix);
  const std::string name = fs::absolute(d).lexically_normal().filename().string().empty()
                               ? fs::absolute(d).lexically_normal().parent_path().filename().string()
                               : fs::absolute(d).lexically_normal().filename().string();
  if (entry_exists(d / "run.json")) return {LoadedRun{name, dir, load_run_file((d / "run.json").string())}};
  std::vector<LoadedRun> out;
  if (entry_exists(d / "campaign.json")) {
    const std::string cpath = (d / "campaign.json").string();
    struct stat st {};
    if (::stat(cpath.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      throw InputError(cpath, "not a readable regular file", "re-run the campaign");
    std::ifstream f(cpath);
    json c;
    try {
      c = json::parse(f);
    } catch (const json::parse_error& e) {
      throw InputError(cpath, fmt::format("not valid JSON at byte {}", e.byte), "re-run the campaign");
    }
    if (!c.contains("phases") || !c["phases"].is_array())
      throw InputError(cpath, "malformed campaign.json: no phases array", "re-run the campaign");
    try {
      for (const auto& ph : c["phases"]) {
        const std::string state = ph.value("state", "?");
        for (const auto& r : ph.value("runs", json::array())) {
          const std::string rel = r.value("dir", "");
          if (rel.empty() || !entry_exists(d / rel / "run.json")) continue;  // a phase that never started
          std::string label = name + "/" + state;
          const std::string part = r.value("part", "");
          if (ph.value("runs", json::array()).size() > 1) label += "/" + part;
          out.push_back({label, (d / rel).string(), load_run_file((d / rel / "run.json").string())});
        }
      }
    } catch (const json::exception& e) {
      throw InputError(cpath, "malformed campaign.json: " + json_reason(e), "re-run the campaign");
    }
    if (out.empty()) throw InputError(cpath, "the campaign has no finished run", "re-run the campaign");
    return out;
  }
  // A folder of run dirs (the data directory's runs/): every direct subdirectory that is a run or a campaign.
  std::vector<fs::path> subs;
  for (const auto& e : fs::directory_iterator(d, ec))
    if (e.is_directory(ec) && (entry_exists(e.path() / "run.json") || entry_exists(e.path() / "campaign.json")))
      subs.push_back(e.path());
  std::sort(subs.begin(), subs.end());
  for (const auto& s : subs) {
    if (entry_exists(s / "run.json")) {
      out.push_back({name + "/" + s.filename().string(), s.string(), load_run_file((s / "run.json").string())});
      continue;
    }
    for (auto& r : load_runs(s.string())) {
      r.label = name + "/" + r.label;
      out.push_back(std::move(r));
    }
  }
  if (out.empty())
    throw InputError(dir, "neither a run dir (run.json) nor a campaign dir (campaign.json), and no run dirs inside",
                     kRunFix);
  return out;
}

std::vector<ReportRow> report_rows(const std::vector<LoadedRun>& runs, bool across_backends) {
  return build_rows(runs, across_backends);
}

// config_key and config_label live with the run model (harness/output/run_model.h).

bool comparable(const Measurement& m) {
  if (m.skipped || !(m.flop_per_s > 0) || m.reps < 1) return false;
  return !(m.workload == "gpt2" && m.step);  // per-step rows; the run's "step" row summarizes them
}

std::string baseline_backend(const std::vector<std::string>& backends) {
  for (const auto& b : backends)
    if (b == "cpu:llmc") return b;
  for (const auto& b : backends)
    if (b != "cpu:reference") return b;
  return backends.empty() ? "" : backends.front();
}

double rate_at(const Measurement& m, double t) { return t > 0 ? m.flop / t : 0; }

std::optional<RatioInterval> rate_ratio(const Measurement& num, const Measurement& den) {
  if (!(num.flop_per_s > 0) || !(den.flop_per_s > 0)) return std::nullopt;
  RatioInterval r;
  r.ratio = num.flop_per_s / den.flop_per_s;
  // Rate bounds are the time bounds swapped: the slow end of the times is the low rate.
  auto lo_hi = [](const Measurement& m, double t_lo, double t_hi) {
    return std::array<double, 2>{rate_at(m, t_hi), rate_at(m, t_lo)};
  };
  const auto n_ci = lo_hi(num, num.time_s.ci95_lo, num.time_s.ci95_hi);
  const auto d_ci = lo_hi(den, den.time_s.ci95_lo, den.time_s.ci95_hi);
  const auto n_q = lo_hi(num, num.time_s.p10, num.time_s.p90);
  const auto d_q = lo_hi(den, den.time_s.p10, den.time_s.p90);
  auto div = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  r.ci95 = {div(n_ci[0], d_ci[1]), div(n_ci[1], d_ci[0])};
  r.p10_p90 = {div(n_q[0], d_q[1]), div(n_q[1], d_q[0])};
  return r;
}

const ReportFormat& report_format(const std::string& name, const std::string& flag) {
  static const ReportFormat kFormats[] = {
      {"md", "markdown", report_markdown},
      {"csv", "", report_csv},
      {"json", "", [](const std::vector<LoadedRun>& runs, const ReportOptions& o) {
         return report_json(runs, o).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
       }}};
  for (const auto& f : kFormats)
    if (name == f.name || (*f.alias && name == f.alias)) return f;
  throw InputError(flag + " " + name, "unknown format", "use md, csv or json");
}

namespace {

// Programs run under `flopwatt measure`: their time and energy whether or not
// --flop gave them a FLOP count (rows without one have no FLOP/s and are in
// no comparison table), with the program's fate when the run is incomplete.
// The markdown table, the JSON and the CSV all read this one list.
json programs_json(const std::vector<LoadedRun>& runs) {
  json out = json::array();
  for (const auto& r : runs)
    for (const auto& m : r.run.measurements) {
      if (m.workload != "measure" || m.skipped) continue;
      const auto src = headline_of(r.run, m).source;
      const EnergyFigures* e = src && m.energy.count(*src) ? &m.energy.at(*src) : nullptr;
      const auto v = fpj(m, src);
      out.push_back({{"run", r.label},
                     {"program", m.op},
                     {"reps", m.reps},
                     {"time", {{"median_s", m.time_s.median}}},
                     {"energy_j", e ? json(e->j) : json(nullptr)},
                     {"avg_power_w", e ? json(e->avg_power_w) : json(nullptr)},
                     {"flop_per_s", m.flop_per_s > 0 ? json(m.flop_per_s) : json(nullptr)},
                     {"flop_per_j", v ? json(*v) : json(nullptr)},
                     {"energy_source", src ? json(*src) : json(nullptr)},
                     {"complete", r.run.complete},
                     {"incomplete_reason", r.run.complete ? json(nullptr)
                                                          : json(context_text(r.run.context, "incomplete_reason"))}});
    }
  return out;
}

json run_summary_json(const LoadedRun& r) {
  const json& c = r.run.context;
  const std::string headline = run_headline(r.run).json_value();
  return {{"label", r.label},
          {"dir", r.dir},
          {"run_id", r.run.run_id},
          {"complete", r.run.complete},
          {"headline_source", headline.empty() ? json(nullptr) : json(headline)},
          {"cpu", c.value("cpu", json(nullptr))},
          {"kernel", c.value("kernel", json(nullptr))},
          {"threads", c.value("threads", json(nullptr))},
          {"ac_online", c.value("ac_online", json(nullptr))},
          {"battery_percent", c.value("battery_percent", json(nullptr))}};
}

// One run's figures of a row, its FLOP/J from the measurement's own headline source.
json run_figures_json(const LoadedRun& run, const Measurement& x) {
  const auto src = headline_of(run.run, x).source;
  json e = {{"backend", x.backend},
            {"flop_per_s", x.flop_per_s},
            {"flop_per_s_p10", rate_at(x, x.time_s.p90)},
            {"flop_per_s_p90", rate_at(x, x.time_s.p10)},
            {"flop_per_s_ci95", {rate_at(x, x.time_s.ci95_hi), rate_at(x, x.time_s.ci95_lo)}},
            {"reps", x.reps},
            {"verified", x.verified ? json(*x.verified) : json(nullptr)},
            {"energy_source", json_or_null(src)},
            {"flop_per_j", json_or_null(fpj(x, src))}};
  json_set(e, metric::kTimeMedian.name, x.time_s.median);
  if (src) {
    const EnergyFigures& f = x.energy.at(*src);
    e["energy_confidence"] = f.confidence;
    e["energy_j"] = f.j;
    e["avg_power_w"] = f.avg_power_w;
  }
  return e;
}

// A run's measurement against the baseline run's; nullopt when the rates do not compare.
std::optional<json> ratio_json(const LoadedRun& run, const Measurement& x, const LoadedRun& base_run,
                               const Measurement& base) {
  const auto rr = rate_ratio(x, base);
  if (!rr) return std::nullopt;
  json q = {{"flop_per_s", rr->ratio}, {"ci95", rr->ci95}, {"p10_p90", rr->p10_p90}};
  // FLOP/J only compares like with like: one source id measured in both runs.
  const auto shared = shared_headline(run.run, x, base_run.run, base);
  const auto a = fpj(x, shared), b = fpj(base, shared);
  if (a && b && *b > 0) {
    q["flop_per_j"] = *a / *b;
    q["flop_per_j_source"] = *shared;
  } else {
    q["flop_per_j"] = nullptr;
    q["flop_per_j_source"] = nullptr;
  }
  return q;
}

json row_json(const Row& row, const std::vector<LoadedRun>& runs, const ReportOptions& o) {
  const Measurement& m = *row.first;
  json jr = {{"workload", m.workload}, {"op", m.op},     {"pass", json_or_null(m.pass)},
             {"layer", m.layer ? json(*m.layer) : json(nullptr)},
             {"backend", row.backend}, {"dtype", m.dtype},
             {"shape", m.shape ? json{{"M", m.shape->M}, {"N", m.shape->N}, {"K", m.shape->K}} : json(nullptr)},
             {"layout", json_or_null(m.layout)}, {"threads", json_or_null(m.threads)},
             {"flop", m.flop},         {"simulated", m.simulated}};
  json per = json::object(), ratios = json::object();
  const Measurement* base = row.per_run[o.baseline];
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const Measurement* x = row.per_run[r];
    const std::string& label = runs[r].label;
    if (!x) {
      per[label] = row.skipped[r].empty() ? json(nullptr) : json{{"skipped", row.skipped[r]}};
      continue;
    }
    per[label] = run_figures_json(runs[r], *x);
    if (r == o.baseline || !base) continue;
    if (auto q = ratio_json(runs[r], *x, runs[o.baseline], *base)) ratios[label] = std::move(*q);
  }
  jr["runs"] = per;
  jr["ratios_vs_baseline"] = ratios;
  return jr;
}

}  // namespace

json report_json(const std::vector<LoadedRun>& runs, const ReportOptions& o) {
  json j;
  j["kind"] = "flopwatt-report";
  j["schema_version"] = 2;  // 2: time/median_s as {"time": {"median_s"}}
  j["baseline"] = runs.empty() ? json(nullptr) : json(runs[o.baseline].label);
  j["ratio_method"] =
      "FLOP/s ratio = run / baseline at the median times; ci95: from each median's 95% CI (order statistics), "
      "p10_p90: from each run's p10..p90, both combined worst-case; FLOP/J ratio only from one energy source "
      "both runs measured (flop_per_j_source), never a battery gauge of a run on mains";
  json rs = json::array();
  for (const auto& r : runs) rs.push_back(run_summary_json(r));
  j["runs"] = rs;
  json rows = json::array();
  for (const Row& row : build_rows(runs, o.across_backends && runs.size() > 1)) rows.push_back(row_json(row, runs, o));
  j["rows"] = rows;
  if (json p = programs_json(runs); !p.empty()) j["programs"] = std::move(p);
  if (json g = grad_order_json(runs); !g.is_null()) j["grad_order"] = std::move(g);
  return j;
}

std::string report_csv(const std::vector<LoadedRun>& runs, const ReportOptions& o) {
  // Long format (one line per row and run): a spreadsheet or pandas pivots it freely.
  const json j = report_json(runs, o);
  std::ostringstream os;
  const char* cols[] = {"run", "workload", "op", "pass", "layer", "backend", "dtype", "M", "N", "K", "simulated",
                        "flop", "reps", "time/median_s", "flop_per_s", "flop_per_s_p10", "flop_per_s_p90",
                        "flop_per_s_ci95_lo", "flop_per_s_ci95_hi", "energy_source", "flop_per_j",
                        "energy_confidence", "skipped", "ratio_vs_baseline/flop_per_s",
                        "ratio_vs_baseline/ci95_lo", "ratio_vs_baseline/ci95_hi", "ratio_vs_baseline/p10_p90_lo",
                        "ratio_vs_baseline/p10_p90_hi", "ratio_vs_baseline/flop_per_j", "energy_j", "avg_power_w"};
  for (std::size_t i = 0; i < std::size(cols); ++i) os << (i ? "," : "") << cols[i];
  os << "\n";
  auto num = [](const json& v) -> std::string {
    if (v.is_null()) return "";
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    if (v.is_number_integer()) return std::to_string(v.get<long long>());
    if (v.is_number()) return fmt::format("{:.9g}", v.get<double>());
    return csv_escape(v.get<std::string>());
  };
  auto put_row = [&os](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) os << (i ? "," : "") << cells[i];
    os << "\n";
  };
  for (const auto& row : j["rows"]) {
    for (const auto& run : j["runs"]) {
      const std::string label = run["label"];
      const json& e = row["runs"][label];
      if (e.is_null()) continue;
      const json shape = row["shape"];
      const json none;
      auto sh = [&](const char* k) { return shape.is_null() ? std::string() : num(shape[k]); };
      const json& q = row["ratios_vs_baseline"].contains(label) ? row["ratios_vs_baseline"][label] : none;
      auto qv = [&](const char* k, int i = -1) {
        if (q.is_null() || !q.contains(k)) return std::string();
        return i < 0 ? num(q[k]) : num(q[k][i]);
      };
      auto ev = [&](std::string_view k) {
        const json* v = json_get(e, k);
        return v ? num(*v) : std::string();
      };
      auto ci = [&](int i) { return e.contains("flop_per_s_ci95") ? num(e["flop_per_s_ci95"][i]) : std::string(); };
      const std::vector<std::string> cells = {
          csv_escape(label), num(row["workload"]), num(row["op"]), num(row["pass"]), num(row["layer"]),
          num(row["backend"]), num(row["dtype"]), sh("M"), sh("N"), sh("K"), num(row["simulated"]),
          num(row["flop"]), ev("reps"), ev(metric::kTimeMedian.name), ev("flop_per_s"), ev("flop_per_s_p10"),
          ev("flop_per_s_p90"), ci(0), ci(1), ev("energy_source"), ev("flop_per_j"), ev("energy_confidence"),
          ev("skipped"), qv("flop_per_s"), qv("ci95", 0), qv("ci95", 1), qv("p10_p90", 0), qv("p10_p90", 1),
          qv("flop_per_j"), ev("energy_j"), ev("avg_power_w")};
      put_row(cells);
    }
  }
  // A measured program without --flop is in no row above: its time and
  // energy still are the run's result.
  if (j.contains("programs"))
    for (const auto& p : j["programs"]) {
      if (!p["flop_per_s"].is_null()) continue;
      std::vector<std::string> cells(std::size(cols));
      auto cell = [&](std::string_view col) -> std::string& {
        return cells[std::size_t(std::find(std::begin(cols), std::end(cols), col) - std::begin(cols))];
      };
      cell("run") = csv_escape(p["run"].get<std::string>());
      cell("workload") = "measure";
      cell("op") = num(p["program"]);
      cell("reps") = num(p["reps"]);
      cell(metric::kTimeMedian.name) = num(p["time"]["median_s"]);
      cell("energy_source") = num(p["energy_source"]);
      cell("energy_j") = num(p["energy_j"]);
      cell("avg_power_w") = num(p["avg_power_w"]);
      put_row(cells);
    }
  return os.str();
}

namespace {

void md_runs_table(std::ostringstream& os, const std::vector<LoadedRun>& runs, const ReportOptions& o) {
  os << "| # | run | run id | complete | CPU | threads | power | FLOP/J from |\n|---|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    const json& c = r.run.context;
    os << fmt::format("| {} | {}{} | {} | {} | {} | {} | {} | {} |\n", i + 1, md_escape(r.label),
                      i == o.baseline && runs.size() > 1 ? " (baseline)" : "", r.run.run_id,
                      r.run.complete ? "yes" : "**no**", md_escape(context_text(c, "cpu")),
                      c.contains("threads") ? c["threads"].dump() : "?", power_text(r), used_sources(r.run));
  }
}

void md_multi_header(std::ostringstream& os, std::size_t n, std::size_t baseline) {
  os << "| configuration | backend |";
  for (std::size_t r = 0; r < n; ++r) os << " " << r + 1 << ": GFLOP/s |";
  for (std::size_t r = 0; r < n; ++r)
    if (r != baseline) os << " " << r + 1 << "/" << baseline + 1 << " FLOP/s |";
  for (std::size_t r = 0; r < n; ++r) os << " " << r + 1 << ": GFLOP/J |";
  for (std::size_t r = 0; r < n; ++r)
    if (r != baseline) os << " " << r + 1 << "/" << baseline + 1 << " FLOP/J |";
  os << "\n|---|---|";
  for (std::size_t k = 0; k < 4 * n - 2; ++k) os << "---|";
  os << "\n";
}

// One configuration across several runs: rates, rate ratios, FLOP/J and FLOP/J
// ratios; ratio_sources collects the sources of ratios marked *.
void md_multi_row(std::ostringstream& os, const Row& row, const std::vector<LoadedRun>& runs, const ReportOptions& o,
                  std::set<std::string>& ratio_sources) {
  const bool across = o.across_backends;  // the backend column lists several; cells say which is simulated
  os << "| " << md_escape(row.label) << " | " << row.backend
     << (row.first->simulated && !across ? " (sim)" : "") << " |";
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const Measurement* x = row.per_run[r];
    if (x)
      os << fmt::format(" {}{} |", rate_with_spread(*x), x->simulated && across ? " (sim)" : "");
    else
      os << (row.skipped[r].empty() ? " - |" : " skipped |");
  }
  const Measurement* base = row.per_run[o.baseline];
  for (std::size_t r = 0; r < runs.size(); ++r) {
    if (r == o.baseline) continue;
    const auto rr = row.per_run[r] && base ? rate_ratio(*row.per_run[r], *base) : std::nullopt;
    const bool spread = rr && has_spread(*row.per_run[r]) && has_spread(*base);
    os << (!rr ? " - |"
               : spread ? fmt::format(" {} [{}-{}] |", g3(rr->ratio), g3(rr->ci95[0]), g3(rr->ci95[1]))
                        : fmt::format(" {} (no interval: 1 rep) |", g3(rr->ratio)));
  }
  std::vector<std::optional<std::string>> srcs(runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const Measurement* x = row.per_run[r];
    srcs[r] = x ? headline_of(runs[r].run, *x).source : std::nullopt;
    const auto v = x ? fpj(*x, srcs[r]) : std::nullopt;
    const bool low = v && x->energy.at(*srcs[r]).confidence == "low";
    if (v) os << ' ' << giga(*v) << (low ? "?" : "") << " |";
    else os << " - |";
  }
  for (std::size_t r = 0; r < runs.size(); ++r) {
    if (r == o.baseline) continue;
    const Measurement* x = row.per_run[r];
    const auto shared = x && base ? shared_headline(runs[r].run, *x, runs[o.baseline].run, *base) : std::nullopt;
    const auto a = x ? fpj(*x, shared) : std::nullopt;
    const auto b = base ? fpj(*base, shared) : std::nullopt;
    if (a && b && *b > 0) {
      // Marked when the ratio's source is not the one both columns show.
      const bool other = shared != srcs[r] || shared != srcs[o.baseline];
      os << ' ' << g3(*a / *b) << (other ? "*" : "") << " |";
      if (other) ratio_sources.insert(*shared);
    } else {
      os << " - |";
    }
  }
  os << "\n";
}

// One run: each configuration's backends against the configuration's baseline backend.
void md_single_table(std::ostringstream& os, const Run& run, const std::vector<Row>& rows, const std::string& w) {
  os << "| configuration | backend | GFLOP/s | speedup | GFLOP/J | energy source | verified |\n"
        "|---|---|---|---|---|---|---|\n";
  // Baseline backend per configuration, among the backends that ran it.
  std::map<std::string, std::vector<std::string>> backends_of;
  std::map<std::pair<std::string, std::string>, const Measurement*> by;
  for (const Row& row : rows)
    if (row.per_run[0]) {
      backends_of[row.key].push_back(row.backend);
      by[{row.key, row.backend}] = row.per_run[0];
    }
  for (const Row& row : rows) {
    if (row.first->workload != w) continue;
    os << "| " << md_escape(row.label) << " | " << row.backend
       << (row.first->simulated ? " (sim)" : "") << " |";
    const Measurement* x = row.per_run[0];
    if (!x) {
      os << " skipped: " << md_escape(row.skipped[0]) << " | | | | |\n";
      continue;
    }
    os << " " << rate_with_spread(*x) << " |";
    const std::string bb = baseline_backend(backends_of[row.key]);
    if (bb == row.backend || backends_of[row.key].size() < 2) {
      os << " (baseline) |";
    } else {
      const Measurement* base = by[{row.key, bb}];
      const auto rr = rate_ratio(*x, *base);
      const bool spread = has_spread(*x) && has_spread(*base);
      os << (!rr ? " - |"
                 : spread ? fmt::format(" {} [{}-{}] vs {} |", g3(rr->ratio), g3(rr->ci95[0]), g3(rr->ci95[1]), bb)
                          : fmt::format(" {} vs {} (no interval: 1 rep) |", g3(rr->ratio), bb));
    }
    const auto src = headline_of(run, *x).source;
    const auto v = fpj(*x, src);
    const bool low = v && x->energy.at(*src).confidence == "low";
    os << (v ? " " + giga(*v) + (low ? " (low confidence)" : "") : std::string(" -")) << " | "
       << (src ? *src : "-") << " | " << (x->verified ? (*x->verified ? "yes" : "**FAILED**") : "-") << " |\n";
  }
}

// The programs `flopwatt measure` ran (programs_json), one line each.
void md_measured_programs(std::ostringstream& os, const std::vector<LoadedRun>& runs) {
  const json programs = programs_json(runs);
  if (programs.empty()) return;
  os << "\n## measured programs\n\n| run | program | runs | time (median) | J | W | GFLOP/s | GFLOP/J | source | "
        "complete |\n|---|---|---|---|---|---|---|---|---|---|\n";
  auto g3_or_dash = [](const json& v) { return v.is_null() ? std::string("-") : g3(v.get<double>()); };
  auto giga_or_dash = [](const json& v) { return v.is_null() ? std::string("-") : giga(v.get<double>()); };
  for (const auto& p : programs)
    os << fmt::format("| {} | {} | {} | {} s | {} | {} | {} | {} | {} | {} |\n", md_escape(p["run"]),
                      md_escape(p["program"]), p["reps"].get<int>(), g3(p["time"]["median_s"].get<double>()),
                      g3_or_dash(p["energy_j"]), g3_or_dash(p["avg_power_w"]), giga_or_dash(p["flop_per_s"]),
                      giga_or_dash(p["flop_per_j"]),
                      p["energy_source"].is_null() ? std::string("-") : md_escape(p["energy_source"]),
                      p["complete"].get<bool>() ? std::string("yes")
                                                : "**no**: " + md_escape(p["incomplete_reason"].get<std::string>()));
}

}  // namespace

std::string report_markdown(const std::vector<LoadedRun>& runs, const ReportOptions& o) {
  std::ostringstream os;
  os << "# flopwatt report\n\n";
  md_runs_table(os, runs, o);
  const std::vector<Row> rows = build_rows(runs, o.across_backends && runs.size() > 1);
  const bool multi = runs.size() > 1;
  os << "\n";
  if (multi) {
    os << "GFLOP/s at the median time, [p10-p90 of the repetitions]. Ratio: run / baseline at the medians, "
          "[interval from both medians' 95% CIs, combined worst-case]. GFLOP/J from each run's headline source "
          "(past battery gauges on mains); its ratio only from one source both runs measured.\n";
  } else {
    os << "GFLOP/s at the median time, [p10-p90 of the repetitions]; speedup vs the baseline backend of each "
          "configuration, [interval from both medians' 95% CIs]; GFLOP/J from the named source.\n";
  }
  std::set<std::string> ratio_sources;  // sources of the ratios marked *
  std::vector<std::string> workloads;
  for (const auto& row : rows)
    if (std::find(workloads.begin(), workloads.end(), row.first->workload) == workloads.end())
      workloads.push_back(row.first->workload);
  for (const auto& w : workloads) {
    os << "\n## " << w << "\n\n";
    if (!multi) {
      md_single_table(os, runs[0].run, rows, w);
      continue;
    }
    md_multi_header(os, runs.size(), o.baseline);
    for (const Row& row : rows)
      if (row.first->workload == w) md_multi_row(os, row, runs, o, ratio_sources);
  }
  if (!ratio_sources.empty()) {
    std::string list;
    for (const auto& id : ratio_sources) list += (list.empty() ? "" : ", ") + id;
    os << "\n\\* FLOP/J ratio from a source both runs measured (" << list
       << "), not the columns' own sources (a battery gauge does not measure the machine on mains).\n";
  }
  md_measured_programs(os, runs);
  const bool programs = std::any_of(runs.begin(), runs.end(), [](const LoadedRun& r) {
    return std::any_of(r.run.measurements.begin(), r.run.measurements.end(),
                       [](const Measurement& m) { return m.workload == "measure" && !m.skipped; });
  });
  if (rows.empty() && !programs) os << "\nNo comparable measurements.\n";
  os << grad_order_markdown(runs);
  return os.str();
}

}  // namespace flopwatt
