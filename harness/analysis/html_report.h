// `flopwatt report --format html`: one self-contained page a colleague opens
// from file:// with no network: each run's context (machine, supply, power
// sources, why each row's FLOP/J comes from the source it does), the tables of
// the markdown report (sortable), and charts drawn by Chart.js (Debian's
// libjs-chart.js, inlined at report time): power trace per source with the
// supply changes and each row's window shaded, FLOP/s and FLOP/J per op and
// backend, the roofline and energy roofline placements, the mains-vs-battery
// comparison, and with --paper the study's figures beside these runs'.
// Every figure is read from the run: a row's FLOP/J is its judged headline
// (headline_of), nothing is chosen again in the page.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/analysis/report.h"
#include "harness/store/store.h"

namespace flopwatt {

// Text safe inside an element and inside a quoted attribute: & < > " ' escaped.
std::string html_escape(std::string_view s);

// JSON safe inside a <script> element: every "<", ">" and "&" (which only
// strings can hold) and U+2028/2029 become \uXXXX, so no "</script>" or
// "<!--" in a run id or label can end or change the element. Invalid UTF-8
// becomes U+FFFD.
std::string script_json(const nlohmann::json& j);

// Markdown as the report's sections write it (## headings, | tables |, text
// lines) as HTML: every table sortable, every cell and line escaped. The
// gradient-order section of the markdown report reaches the page this way.
std::string markdown_tables_html(const std::string& md);

// The chart library as Debian's libjs-chart.js installs it.
inline constexpr const char* kChartJsPath = "/usr/share/javascript/chart.js/chart.min.js";
struct ChartJs {
  std::string path;
  std::string version;  // from the file's banner ("3.9.1")
  std::string licence;  // from the banner ("MIT")
  std::string source;   // the minified file, safe to put inside <script>
};
// Reads kChartJsPath ($FLOPWATT_CHARTJS overrides it); throws InputError
// naming the file and the package to install when it is missing or is not
// Chart.js.
ChartJs load_chartjs();

struct HtmlOptions {
  ReportOptions report;
  std::string title = "flopwatt report";
  // Where the page gets Chart.js: inlined when empty, else this relative URL
  // (a site's pages share one copy next to them).
  std::string chartjs_href;
  // Trusted markup shown above the title (a site's links back to its index).
  std::string nav_html;
  // A run's power samples; by default its <dir>/samples.csv (none when absent).
  std::function<std::vector<store::SampleRow>(const LoadedRun&)> samples;
  // `report --paper --format html`: Rösti & Franz's four figures beside this
  // page's runs' (paper_report), as a table and a chart, above the runs.
  bool paper = false;
};

// The page. Chart.js's version and licence are written into it.
std::string report_html(const std::vector<LoadedRun>& runs, const HtmlOptions& o, const ChartJs& chart);

// The data the page's charts draw, as embedded in it (tests compare the
// drawn charts with it): per run the power trace, rates, FLOP/J, roofline and
// energy roofline points, the mains-vs-battery rows when both supplies are
// present, and paper_report's figures with o.paper.
nlohmann::json html_chart_data(const std::vector<LoadedRun>& runs, const HtmlOptions& o);

}  // namespace flopwatt
