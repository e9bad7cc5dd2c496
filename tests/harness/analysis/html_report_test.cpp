// `flopwatt report --format html`: escaping, the inlined Chart.js, the judged
// headline in every FLOP/J cell, the chart data against the run's files, and
// the command's one-line errors. tests/harness/analysis/html_browser_test.py
// opens the page in Chromium.
#include "harness/analysis/html_report.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "harness/analysis/campaign.h"
#include "harness/run/roofline.h"
#include "workloads/error.h"

namespace flopwatt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kCampaign = std::string(FLOPWATT_TEST_FIXTURES) + "/runs/campaign-gemm-smoke";

fs::path temp_dir(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() / ("flopwatt_html_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(html_report, EscapesTextAndAttributes) {
  EXPECT_EQ(html_escape("<script>alert(\"x\")</script> & 'q'"),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;");
}

TEST(html_report, ScriptJsonCannotEndItsElement) {
  const std::string hostile = "</script><!--<script>\u2028\u2029&\n\"";
  const std::string s = script_json(json{{"id", hostile}});
  EXPECT_EQ(s.find('<'), std::string::npos) << s;
  EXPECT_EQ(s.find('>'), std::string::npos) << s;
  EXPECT_EQ(s.find('&'), std::string::npos) << s;
  EXPECT_EQ(s.find("\xE2\x80\xA8"), std::string::npos) << "U+2028 raw";
  EXPECT_EQ(s.find("\xE2\x80\xA9"), std::string::npos) << "U+2029 raw";
  EXPECT_EQ(json::parse(s)["id"], hostile);  // the same text once parsed
}

// The markdown report's gradient-order section reaches the page as tables.
TEST(html_report, MarkdownTablesBecomeSortableTables) {
  const std::string h = markdown_tables_html(
      "\n## gradient order\n\n| run | a\\|b |\n|---|---|\n| <script>x</script> | 1.5 |\n| r2 | 2 |\nnote & more\n");
  EXPECT_EQ(h,
            "<h3>gradient order</h3>\n<table class=\"sortable\"><thead><tr><th>run</th><th>a|b</th></tr></thead><tbody>\n"
            "<tr><td>&lt;script&gt;x&lt;/script&gt;</td><td>1.5</td></tr>\n<tr><td>r2</td><td>2</td></tr>\n"
            "</tbody></table>\n<p>note &amp; more</p>\n");
}

TEST(html_report, LoadsDebiansChartJs) {
  ::unsetenv("FLOPWATT_CHARTJS");
  const ChartJs c = load_chartjs();  // scripts/packages.txt installs libjs-chart.js
  EXPECT_EQ(c.path, kChartJsPath);
  EXPECT_EQ(c.version, "3.9.1");
  EXPECT_EQ(c.licence, "MIT");
  EXPECT_EQ(c.source.find("</script"), std::string::npos);
}

TEST(html_report, MissingOrForeignChartJsIsBadInput) {
  const fs::path d = temp_dir("chartjs");
  ::setenv("FLOPWATT_CHARTJS", (d / "absent.js").c_str(), 1);
  try {
    load_chartjs();
    ADD_FAILURE() << "no error for a missing Chart.js";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("libjs-chart.js"), std::string::npos) << e.what();
  }
  std::ofstream(d / "other.js") << "console.log('not a chart library')";
  ::setenv("FLOPWATT_CHARTJS", (d / "other.js").c_str(), 1);
  EXPECT_THROW(load_chartjs(), InputError);
  ::unsetenv("FLOPWATT_CHARTJS");
  fs::remove_all(d);
}

ChartJs fake_chart() { return ChartJs{"chart.min.js", "9.9.9", "MIT", "window.Chart = undefined;"}; }

// Every FLOP/J cell holds, exactly, the figure of the source the run judged
// for that row: the page chooses nothing.
TEST(html_report, FlopPerJouleCellsAreEachRowsJudgedHeadline) {
  const auto runs = load_runs(kCampaign);
  ASSERT_EQ(runs.size(), 2u);
  const std::string page = report_html(runs, HtmlOptions{}, fake_chart());
  std::size_t cells = 0;
  for (std::size_t p = page.find("<tr data-run=\""); p != std::string::npos; p = page.find("<tr data-run=\"", p + 1)) {
    const std::string tr = page.substr(p, page.find("</tr>", p) - p);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(tr, m, std::regex(R"re(^<tr data-run="(\d+)" data-m="(\d+)">)re"))) << tr;
    const flopwatt::Run& run = runs.at(std::stoul(m[1])).run;
    const Measurement& x = run.measurements.at(std::stoul(m[2]));
    const auto src = headline_of(run, x).source;
    const std::string key = "class=\"n fpj\" data-v=\"";
    const auto at = tr.find(key);
    if (!src) {
      EXPECT_EQ(at, std::string::npos) << tr;
      continue;
    }
    ASSERT_NE(at, std::string::npos) << tr;
    const std::string v = tr.substr(at + key.size(), tr.find('"', at + key.size()) - at - key.size());
    EXPECT_EQ(std::stod(v), *x.energy.at(*src).flop_per_j) << config_label(x) << " " << x.backend;
    ++cells;
  }
  std::size_t rows = 0;
  for (const auto& r : runs)
    for (const auto& m : r.run.measurements) rows += comparable(m) && headline_of(r.run, m).source ? 1 : 0;
  EXPECT_EQ(cells, rows);
  // A campaign's two supplies are compared, and Chart.js's version is on the page.
  EXPECT_NE(page.find("id=\"mains-battery\""), std::string::npos);
  EXPECT_NE(page.find("Chart.js 9.9.9 (MIT licence)"), std::string::npos);
}

// The trace is the run's samples.csv: a counter differenced (one point fewer),
// a gauge as read; every non-skipped row's window and the context's supply
// changes are there.
TEST(html_report, ChartDataFollowsTheRunsFiles) {
  const auto runs = load_runs(kCampaign);
  const json d = html_chart_data(runs, HtmlOptions{});
  ASSERT_EQ(d["runs"].size(), 2u);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto samples = store::parse_samples_csv(read(fs::path(runs[i].dir) / "samples.csv"));
    std::map<std::string, std::pair<std::string, std::size_t>> n;
    for (const auto& s : samples) n[s.source_id].first = *s.unit, ++n[s.source_id].second;
    const json& t = d["runs"][i]["trace"];
    ASSERT_EQ(t["sources"].size(), n.size());
    for (const auto& s : t["sources"]) {
      const auto& [unit, k] = n.at(s["id"].get<std::string>());
      EXPECT_EQ(s["x"].size(), unit == "J" ? k - 1 : k) << s["id"];
      EXPECT_EQ(s["y"].size(), s["x"].size());
    }
    std::size_t windows = 0;
    for (const auto& m : runs[i].run.measurements) windows += m.window_ns && !m.skipped;
    EXPECT_EQ(t["windows"].size(), windows);
    std::size_t rates = 0;
    for (const auto& b : d["runs"][i]["rates"]["backends"])
      for (const auto& v : b["flop_per_s"]) rates += !v.is_null();
    std::size_t comparable_rows = 0;
    for (const auto& m : runs[i].run.measurements) comparable_rows += comparable(m);
    EXPECT_EQ(rates, comparable_rows);
  }
  EXPECT_FALSE(d["mains_battery"].is_null());
}

// The energy roofline places each row with an intensity and a judged FLOP/J
// at that figure, with the ceiling energy_ceiling_of gives it (intensities,
// roofs and a stored fit are added to the first run here: the fixture's runs
// were recorded without ceilings).
TEST(html_report, EnergyRooflinePointsAreTheRowsJudgedFiguresAndTheirCeilings) {
  auto runs = load_runs(kCampaign);
  ASSERT_FALSE(runs.empty());
  double intensity = 4;
  for (auto& m : runs[0].run.measurements) {
    m.intensity = intensity++;
    m.roof_flop_per_s = 1e11;
  }
  std::optional<std::string> fit_source;
  for (const auto& m : runs[0].run.measurements)
    if (!fit_source) fit_source = headline_of(runs[0].run, m).source;
  ASSERT_TRUE(fit_source);
  runs[0].run.energy_roofline = {{"host", {{"j_per_flop", 1e-11}, {"j_per_byte", 1e-10}, {"constant_w", 2.0},
                                           {"source", *fit_source}}}};
  const json d = html_chart_data(runs, HtmlOptions{});
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const json& pts = d["runs"][i]["energy_roofline"];
    std::size_t k = 0, ceilings = 0;
    for (const auto& m : runs[i].run.measurements) {
      const auto src = headline_of(runs[i].run, m).source;
      if (!comparable(m) || !m.intensity || !(*m.intensity > 0) || !src || !m.energy.at(*src).flop_per_j) continue;
      ASSERT_LT(k, pts.size());
      const json& p = pts[k++];
      EXPECT_EQ(p["flop_per_j"].get<double>(), *m.energy.at(*src).flop_per_j);
      EXPECT_EQ(p["source"], *src);
      EXPECT_EQ(p["intensity"].get<double>(), *m.intensity);
      const auto c = energy_ceiling_of(runs[i].run, m);
      EXPECT_EQ(p["ceiling"].is_null(), !c);
      if (c) {
        EXPECT_EQ(p["ceiling"].get<double>(), *c);
        ++ceilings;
      }
    }
    EXPECT_EQ(k, pts.size());
    if (i == 0) {
      EXPECT_GT(ceilings, 0u) << "the fitted run's rows of its source have a ceiling";
    }
  }
}

// `report --paper --format html`: the study's figures as `report --paper`
// computes them (paper_report), in the chart data and as the markdown table.
TEST(html_report, PaperFiguresAreThoseOfReportPaper) {
  const auto runs = load_runs(kCampaign);
  HtmlOptions o;
  EXPECT_TRUE(html_chart_data(runs, o)["paper"].is_null());
  o.paper = true;
  const json d = html_chart_data(runs, o);
  EXPECT_EQ(d["paper"], paper_report(runs));
  ASSERT_EQ(d["paper"]["figures"].size(), 4u);
  const std::string page = report_html(runs, o, fake_chart());
  EXPECT_NE(page.find("id=\"chart-paper\""), std::string::npos);
  EXPECT_NE(page.find("<td>2.8-3.1x</td>"), std::string::npos);
  EXPECT_EQ(count(page, "<section class=\"paper\""), 1u);
}

// Hostile text from a run (its id, its directory's name, a backend, the CPU
// model) is text on the page: never markup, never the end of a script.
TEST(html_report, HostileStringsAreEscaped) {
  auto runs = load_runs(kCampaign + "/mains");
  const std::string evil = "\"'><script>window.pwned=1</script>\n<img src=x onerror=pwned=2>\u2028";
  runs[0].label = evil;
  runs[0].run.run_id = evil;
  runs[0].run.context["cpu"] = evil;
  runs[0].run.measurements[0].backend = evil;
  const std::string page = report_html(runs, HtmlOptions{}, fake_chart());
  EXPECT_EQ(page.find("<script>window.pwned"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  // The page's own three scripts: the data, Chart.js, the charts.
  EXPECT_EQ(count(page, "<script"), 3u);
  EXPECT_EQ(count(page, "</script>"), 3u);
  EXPECT_NE(page.find(html_escape(evil)), std::string::npos);
}

int run_cli(const std::string& args, std::string* err) {
  const fs::path d = temp_dir("io");
  const std::string cmd = std::string(FLOPWATT_BINARY) + " " + args + " >" + (d / "out").string() + " 2>" +
                          (d / "err").string() + " </dev/null";
  const int st = std::system(cmd.c_str());
  *err = read(d / "err");
  fs::remove_all(d);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(html_report_cli, WritesOnePageAndNamesAMissingChartJs) {
  const fs::path d = temp_dir("cli");
  std::string err;
  ASSERT_EQ(run_cli("report " + kCampaign + " --format html -o " + (d / "r.html").string(), &err), 0) << err;
  const std::string page = read(d / "r.html");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("Chart.js v3.9.1"), std::string::npos) << "Chart.js is inlined";
  EXPECT_EQ(page.find("src=\"http"), std::string::npos);
  EXPECT_EQ(run_cli("report " + kCampaign + " --format htm", &err), 2);
  EXPECT_NE(err.find("html"), std::string::npos) << err;
  ::setenv("FLOPWATT_CHARTJS", (d / "none.js").c_str(), 1);
  EXPECT_EQ(run_cli("report " + kCampaign + " --format html -o " + (d / "x.html").string(), &err), 2);
  ::unsetenv("FLOPWATT_CHARTJS");
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("libjs-chart.js"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(d / "x.html"));
  fs::remove_all(d);
}

}  // namespace
}  // namespace flopwatt
