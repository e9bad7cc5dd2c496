// One figure on every surface: one `run gemm` on the fixture laptop (tests/fixtures/power/laptop, a
// tree whose RAPL psys counter does not advance while it is read, so every row's judgement refuses
// it), then every surface that reads the run names, for each row, the source the row's own window
// judgement chose and that source's figure: run.json's rows, run.json's run-level headline (derived
// from the rows: a source some row uses, or "mixed"), the console summary, `report --format json`,
// `store export --format csv`, `history flop_per_j` and plot.py's choice. Before the headline was
// derived from the rows, the run-level one was chosen at the run's start (psys, which no row used)
// and the store's columns, the console summary and plot took that or an order of their own.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/harness/cli_support.h"

namespace fs = std::filesystem;
using nlohmann::json;
using flopwatt::testing::run_command_line;

namespace {

json read_json(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

struct OneRun {
  fs::path dir, store;
  json run;
  std::string console;
};

const OneRun& laptop_run() {
  static const OneRun r = [] {
    OneRun o;
    const fs::path base = flopwatt::testing::temp_dir("one-figure", "laptop");
    fs::copy(fs::path(FLOPWATT_TEST_FIXTURES) / "power" / "laptop", base / "root", fs::copy_options::recursive);
    o.dir = base / "run";
    o.store = base / "store.db";
    const auto res = run_command_line(std::string(FLOPWATT_BINARY) +
                                      " run gemm --backend cpu:reference --shapes '40,40,40;56,48,40' --idle 0 --no-peak"
                                      " --min-reps 3 --min-time 0.3 --sample-period 0.01 --sysfs-root " +
                                      (base / "root").string() + " --out " + o.dir.string() + " --store " +
                                      o.store.string());
    EXPECT_EQ(res.code, 0) << res.err;
    o.console = res.out + res.err;
    if (res.code == 0) o.run = read_json(o.dir / "run.json");
    return o;
  }();
  return r;
}

// Each row's judged headline source (empty when none) and its FLOP/J, keyed by op and shape.
std::map<std::string, std::pair<std::string, double>> row_figures(const json& run) {
  std::map<std::string, std::pair<std::string, double>> out;
  for (const auto& m : run["measurements"]) {
    const std::string key = m["op"].get<std::string>() + " " + m["shape"].dump();
    const std::string src = m["headline_source"].is_string() ? m["headline_source"].get<std::string>() : "";
    double fpj = 0;
    if (!src.empty() && m["energy"][src]["flop_per_j"].is_number()) fpj = m["energy"][src]["flop_per_j"].get<double>();
    out[key] = {src, fpj};
  }
  return out;
}

}  // namespace

TEST(OneFigure, TheRunLevelHeadlineIsDerivedFromTheRowsAndNamesNoSourceTheyRefused) {
  const OneRun& r = laptop_run();
  ASSERT_FALSE(r.run.is_null());
  std::set<std::string> used;
  for (const auto& [key, fig] : row_figures(r.run))
    if (!fig.first.empty()) used.insert(fig.first);
  ASSERT_FALSE(used.empty()) << "the fixture laptop gives some row a headline";
  const json& h = r.run["headline_source"];
  ASSERT_TRUE(h.is_string());
  if (used.size() == 1) EXPECT_EQ(h.get<std::string>(), *used.begin());
  else EXPECT_EQ(h.get<std::string>(), "mixed");
  std::set<std::string> listed;
  for (const auto& s : r.run["headline_sources"]) listed.insert(s["source"].get<std::string>());
  EXPECT_EQ(listed, used);
  // The console's summary names the rows' source, never the one the run's start expected.
  const auto at = r.console.find("FLOP/J ");
  ASSERT_NE(at, std::string::npos) << r.console;
  const std::string line = r.console.substr(at, r.console.find('\n', at) - at);
  for (const auto& s : used) EXPECT_NE(line.find(s), std::string::npos) << line;
  EXPECT_EQ(line.find("psys"), std::string::npos) << line;
}

TEST(OneFigure, ReportStoreHistoryAndPlotGiveEachRowItsOwnSourceAndFigure) {
  const OneRun& r = laptop_run();
  ASSERT_FALSE(r.run.is_null());
  const auto rows = row_figures(r.run);

  // report --format json: each row's energy_source and flop_per_j.
  const auto rep = run_command_line(std::string(FLOPWATT_BINARY) + " report " + r.dir.string() + " --format json");
  ASSERT_EQ(rep.code, 0) << rep.err;
  const json rj = json::parse(rep.out);
  std::size_t seen = 0;
  for (const auto& row : rj["rows"]) {
    const json& e = row["runs"].begin().value();
    const std::string key = row["op"].get<std::string>() + " " + row["shape"].dump();
    ASSERT_TRUE(rows.count(key)) << key;
    EXPECT_EQ(e["energy_source"].is_string() ? e["energy_source"].get<std::string>() : "", rows.at(key).first) << key;
    if (rows.at(key).second > 0) {
      EXPECT_DOUBLE_EQ(e["flop_per_j"].get<double>(), rows.at(key).second) << key;
    }
    ++seen;
  }
  EXPECT_EQ(seen, rows.size());

  // store export --format csv: the headline_source and flop_per_j columns per row.
  const auto ex = run_command_line(std::string(FLOPWATT_BINARY) + " store export --format csv --store " +
                                   r.store.string());
  ASSERT_EQ(ex.code, 0) << ex.err;
  std::istringstream lines(ex.out);
  std::string line;
  std::getline(lines, line);
  const auto head = csv_fields(line);
  auto col = [&](const std::string& name) {
    return std::size_t(std::find(head.begin(), head.end(), name) - head.begin());
  };
  std::size_t exported = 0;
  while (std::getline(lines, line)) {
    const auto f = csv_fields(line);
    ASSERT_EQ(f.size(), head.size()) << line;
    const std::string key = f[col("op")] + " {\"K\":" + f[col("K")] + ",\"M\":" + f[col("M")] + ",\"N\":" + f[col("N")] + "}";
    ASSERT_TRUE(rows.count(key)) << key;
    EXPECT_EQ(f[col("headline_source")], rows.at(key).first) << line;
    if (rows.at(key).second > 0) {
      EXPECT_NEAR(std::stod(f[col("flop_per_j")]), rows.at(key).second, 1e-9 * rows.at(key).second) << line;
    }
    ++exported;
  }
  EXPECT_EQ(exported, rows.size());

  // history flop_per_j: every row with a FLOP/J is a point of its series.
  const auto hist = run_command_line(std::string(FLOPWATT_BINARY) + " history flop_per_j --format json --store " +
                                     r.store.string());
  ASSERT_EQ(hist.code, 0) << hist.err;
  std::size_t with_fpj = 0;
  for (const auto& [key, fig] : rows) with_fpj += fig.second > 0;
  const json hj = json::parse(hist.out);
  EXPECT_EQ(hj.size(), with_fpj) << hist.out;

  // plot.py reads each row's own headline.
  const auto py = run_command_line(
      "/usr/bin/python3 -c 'import json,sys; sys.path.insert(0, \"" + std::string(FLOPWATT_SOURCE_DIR) +
      "/scripts\"); import plot; r=json.load(open(\"" + (r.dir / "run.json").string() +
      "\")); print(\"\\n\".join(str(plot.pick_source(r, m) or \"\") + \"|\" + str(m.get(\"headline_source\") or \"\") "
      "for m in r[\"measurements\"]))'");
  ASSERT_EQ(py.code, 0) << py.err;
  std::istringstream pl(py.out);
  while (std::getline(pl, line)) {
    const auto bar = line.find('|');
    const std::string picked = line.substr(0, bar), own = line.substr(bar + 1);
    // plot draws a bar only for a row whose own source has FLOP/J; never another source.
    if (!picked.empty()) {
      EXPECT_EQ(picked, own) << line;
    }
  }
}
