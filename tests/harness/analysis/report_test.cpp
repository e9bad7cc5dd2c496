// `flopwatt report`: loading run and campaign dirs, row matching, the ratio
// arithmetic with its intervals, the three formats, and one-line errors.
#include "harness/analysis/report.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness/run/statistics.h"
#include "workloads/error.h"

namespace flopwatt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path temp_dir(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() / ("flopwatt_report_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p);
  f << text;
}

// One GEMM row from repetition times; its median, quantiles and CI come from
// harness/run/statistics.h, and the checks below read them back from the row.
Measurement row(const std::string& op, const std::string& backend, std::vector<double> times) {
  Measurement m;
  m.workload = "gemm";
  m.op = op;
  m.backend = backend;
  m.shape = Shape{100, 200, 50};
  m.layout = "NN";
  m.flop = 2.0 * 100 * 200 * 50;
  m.rep_times_s = std::move(times);
  m.reps = int(m.rep_times_s.size());
  m.time_s = summarize(m.rep_times_s);
  m.flop_per_s = m.flop / m.time_s.median;
  m.verified = true;
  return m;
}

Run make_run(const std::string& id, std::vector<Measurement> ms) {
  Run r;
  r.run_id = id;
  r.complete = true;
  r.context = {{"cpu", "Test CPU"}, {"threads", 2}, {"ac_online", true}, {"battery_percent", 90.0}};
  r.power_sources = {{"rapl-powercap:package-0", "package", "counter", true, {}, {}, 0.001, false, {}}};
  r.measurements = std::move(ms);
  return r;
}

fs::path write_run(const fs::path& dir, const Run& r) {
  write(dir / "run.json", to_json(r).dump(1));
  return dir;
}

EnergyFigures fig(double fpj) {
  EnergyFigures f;
  f.j = 2;
  f.avg_power_w = 10;
  f.flop_per_j = fpj;
  return f;
}

const std::vector<double> kSlow = {2.0e-3, 1.9e-3, 2.1e-3, 2.0e-3, 2.2e-3, 1.8e-3, 2.0e-3, 2.05e-3};
const std::vector<double> kFast = {1.0e-3, 0.9e-3, 1.2e-3, 1.0e-3, 1.1e-3, 0.95e-3, 1.0e-3, 1.05e-3};

TEST(Report, RatioOfMediansWithIntervalsFromBothSpreads) {
  const Measurement a = row("qkv", "cpu:llmc", kSlow), b = row("qkv", "cpu:llmc", kFast);
  const auto r = rate_ratio(b, a);
  ASSERT_TRUE(r);
  EXPECT_NEAR(r->ratio, a.time_s.median / b.time_s.median, 1e-12);
  EXPECT_NEAR(r->ratio, 2.0, 1e-12);
  // Worst-case combination: the slow end of b against the fast end of a, and the other way.
  EXPECT_NEAR(r->ci95[0], a.time_s.ci95_lo / b.time_s.ci95_hi, 1e-12);
  EXPECT_NEAR(r->ci95[1], a.time_s.ci95_hi / b.time_s.ci95_lo, 1e-12);
  EXPECT_NEAR(r->p10_p90[0], a.time_s.p10 / b.time_s.p90, 1e-12);
  EXPECT_NEAR(r->p10_p90[1], a.time_s.p90 / b.time_s.p10, 1e-12);
  EXPECT_LE(r->ci95[0], r->ratio);
  EXPECT_GE(r->ci95[1], r->ratio);
  Measurement none = a;
  none.flop_per_s = 0;
  EXPECT_FALSE(rate_ratio(none, a));
}

TEST(Report, EnergySourceChoiceAndExclusion) {
  flopwatt::Run r = make_run("x", {});
  r.power_sources.push_back({"battery:BAT0", "battery", "gauge", true, {}, {}, 1.0, false, {}});
  r.power_sources.push_back({"rapl-powercap:core-0", "core", "counter", true, {}, {}, 0.001, false, {}});
  Measurement m = row("qkv", "cpu:llmc", kSlow);
  m.energy = {{"battery:BAT0", fig(1e9)}, {"rapl-powercap:core-0", fig(3e9)}, {"rapl-powercap:package-0", fig(2e9)}};
  // The window's recorded judgement is what every reader shows.
  m.headline_source = "battery:BAT0";
  EXPECT_EQ(*headline_of(r, m).source, "battery:BAT0");
  // A run written before windows recorded it: the one rule over the stored
  // figures. On mains the battery is a partial draw, never the headline.
  m.headline_source.reset();
  EXPECT_EQ(*headline_of(r, m).source, "rapl-powercap:package-0");
  EXPECT_NE(headline_of(r, m).why.find("battery:BAT0: discharging while the adapter is online"), std::string::npos)
      << headline_of(r, m).why;
  m.energy.erase("rapl-powercap:package-0");
  EXPECT_EQ(*headline_of(r, m).source, "rapl-powercap:core-0");
  m.energy["rapl-powercap:core-0"].flop_per_j.reset();  // no FLOP/J: not usable
  EXPECT_FALSE(headline_of(r, m).source);
  r.context["ac_online"] = false;  // on battery the discharging battery is usable
  EXPECT_EQ(*headline_of(r, m).source, "battery:BAT0");
  r.context["ac_online"] = true;
  EXPECT_EQ(source_domain(r, "npu-model:phoenix"), "npu");
  EXPECT_TRUE(on_mains(r));  // context.ac_online: a report then reads FLOP/J past the battery gauge
  r.context["ac_online"] = false;
  EXPECT_FALSE(on_mains(r));
  r.context.erase("ac_online");
  EXPECT_FALSE(on_mains(r));
}

TEST(Report, FlopPerJouleRatioOnlyFromASharedSource) {
  flopwatt::Run mains = make_run("m", {}), battery = make_run("b", {});
  for (auto* r : {&mains, &battery}) {
    r->power_sources.push_back({"battery:BAT0", "battery", "gauge", true, {}, {}, 1.0, false, {}});
  }
  battery.context["ac_online"] = false;
  Measurement a = row("qkv", "cpu:llmc", kSlow), b = row("qkv", "cpu:llmc", kFast);
  a.energy = {{"battery:BAT0", fig(9e9)}, {"rapl-powercap:package-0", fig(2e9)}};
  b.energy = {{"battery:BAT0", fig(1e9)}, {"rapl-powercap:package-0", fig(3e9)}};
  b.headline_source = "battery:BAT0";  // as that run judged the window (say, --headline-domain battery)
  // On mains the battery gauge reads the charging current: the package is the shared source.
  EXPECT_EQ(*shared_headline(battery, b, mains, a), "rapl-powercap:package-0");
  mains.measurements = {a};
  battery.measurements = {b};
  const json j = report_json({{"mains", "m", mains}, {"battery", "b", battery}}, {});
  const json& q = j["rows"][0]["ratios_vs_baseline"]["battery"];
  EXPECT_EQ(q["flop_per_j_source"], "rapl-powercap:package-0");
  EXPECT_NEAR(q["flop_per_j"].get<double>(), 1.5, 1e-12);
  EXPECT_EQ(j["rows"][0]["runs"]["mains"]["energy_source"], "rapl-powercap:package-0");
  EXPECT_EQ(j["rows"][0]["runs"]["battery"]["energy_source"], "battery:BAT0");
  const std::string md = report_markdown({{"mains", "m", mains}, {"battery", "b", battery}}, {});
  EXPECT_NE(md.find(" 1.5* |"), std::string::npos) << md;
  b.energy.erase("rapl-powercap:package-0");
  EXPECT_FALSE(shared_headline(battery, b, mains, a));  // nothing shared: no ratio at all
}

TEST(Report, SideBySideJsonCsvAndMarkdown) {
  const fs::path d = temp_dir("side");
  Measurement a1 = row("qkv", "cpu:llmc", kSlow), a2 = row("qkv", "cpu:onednn", kFast);
  a1.energy = {{"rapl-powercap:package-0", fig(1e9)}};
  Measurement b1 = row("qkv", "cpu:llmc", kFast);
  b1.energy = {{"rapl-powercap:package-0", fig(3e9)}};
  Measurement b2 = row("qkv", "cpu:onednn", kFast);
  b2.skipped = "backend unavailable: test";
  Measurement other = row("fc", "cpu:llmc", kFast);
  other.shape = Shape{1, 2, 3};  // a configuration only the second run has
  other.flop = 12;
  other.flop_per_s = other.flop / other.time_s.median;
  write_run(d / "before", make_run("run-a", {a1, a2}));
  write_run(d / "after", make_run("run-b", {b1, b2, other}));
  std::vector<LoadedRun> runs;
  for (const char* n : {"before", "after"})
    for (auto& r : load_runs((d / n).string())) runs.push_back(std::move(r));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].label, "before");

  const json j = report_json(runs, {});
  EXPECT_EQ(j["baseline"], "before");
  ASSERT_EQ(j["rows"].size(), 3u);
  const json& llmc = j["rows"][0];
  EXPECT_EQ(llmc["backend"], "cpu:llmc");
  const json& q = llmc["ratios_vs_baseline"]["after"];
  EXPECT_NEAR(q["flop_per_s"].get<double>(), 2.0, 1e-12);
  EXPECT_NEAR(q["flop_per_j"].get<double>(), 3.0, 1e-12);
  EXPECT_EQ(q["flop_per_j_source"], "rapl-powercap:package-0");
  const auto r = rate_ratio(b1, a1);
  EXPECT_NEAR(q["ci95"][0].get<double>(), r->ci95[0], 1e-12);
  EXPECT_NEAR(q["ci95"][1].get<double>(), r->ci95[1], 1e-12);
  EXPECT_EQ(j["rows"][1]["runs"]["after"]["skipped"], "backend unavailable: test");
  EXPECT_TRUE(j["rows"][2]["runs"]["before"].is_null());

  // Baseline 2: the ratio inverts.
  const json j2 = report_json(runs, {1});
  EXPECT_NEAR(j2["rows"][0]["ratios_vs_baseline"]["before"]["flop_per_s"].get<double>(), 0.5, 1e-12);

  const std::string csv = report_csv(runs, {});
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 2 + 2 + 1);  // header, llmc x2, onednn x2, fc x1
  EXPECT_NE(csv.find("after,gemm,qkv,,,cpu:llmc"), std::string::npos) << csv;

  const std::string md = report_markdown(runs, {});
  EXPECT_NE(md.find("| 1 | before (baseline) | run-a |"), std::string::npos) << md;
  EXPECT_NE(md.find("| qkv 100x200x50 | cpu:llmc |"), std::string::npos) << md;
  EXPECT_NE(md.find(" 2 ["), std::string::npos) << md;  // the 2/1 ratio with its interval
  EXPECT_NE(md.find("skipped"), std::string::npos);
  // A single run: speedups within it, relative to llm.c's matmul.
  const std::string one = report_markdown({runs[0]}, {});
  EXPECT_NE(one.find("2 ["), std::string::npos) << one;
  EXPECT_NE(one.find("vs cpu:llmc"), std::string::npos) << one;
  fs::remove_all(d);
}

TEST(Report, AcrossBackendsLinesUpRunsOfOneBackendEach) {
  auto step = [](const std::string& backend, const std::vector<double>& t) {
    Measurement m = row("step", backend, t);
    m.workload = "gpt2";
    m.shape.reset();
    m.layout.reset();
    return m;
  };
  const std::vector<LoadedRun> runs = {{"llmc", "a", make_run("a", {step("cpu:llmc", kSlow)})},
                                       {"npu", "b", make_run("b", {step("npu:sim-phoenix", kFast)})}};
  EXPECT_EQ(report_json(runs, {}).at("rows").size(), 2u);  // by backend: nothing to compare
  ReportOptions o;
  o.across_backends = true;
  const json j = report_json(runs, o);
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["backend"], "cpu:llmc,npu:sim-phoenix");
  EXPECT_EQ(j["rows"][0]["runs"]["npu"]["backend"], "npu:sim-phoenix");
  EXPECT_NEAR(j["rows"][0]["ratios_vs_baseline"]["npu"]["flop_per_s"].get<double>(), 2.0, 1e-12);
}

TEST(Report, CampaignDirAndFolderOfRuns) {
  const fs::path d = temp_dir("camp");
  write_run(d / "c" / "mains", make_run("m", {row("qkv", "cpu:llmc", kSlow)}));
  write_run(d / "c" / "battery", make_run("b", {row("qkv", "cpu:llmc", kFast)}));
  write(d / "c" / "campaign.json",
        json{{"phases",
              {{{"state", "mains"}, {"runs", {{{"part", "gemm"}, {"dir", "mains"}}}}},
               {{"state", "battery"}, {"runs", {{{"part", "gemm"}, {"dir", "battery"}}}}}}}}
            .dump());
  auto runs = load_runs((d / "c").string());
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].label, "c/mains");
  EXPECT_EQ(runs[1].label, "c/battery");
  // A folder holding run dirs (results/runs/) loads each of them.
  auto folder = load_runs(d.string() + "/c/");
  EXPECT_EQ(folder.size(), 2u);  // still the campaign: campaign.json wins
  // A folder holding a campaign and a run: both, the campaign as its phases.
  write_run(d / "single", make_run("s", {row("qkv", "cpu:llmc", kSlow)}));
  fs::create_directories(d / "folder");
  fs::rename(d / "c", d / "folder" / "c");
  fs::rename(d / "single", d / "folder" / "single");
  auto mixed = load_runs((d / "folder").string());
  ASSERT_EQ(mixed.size(), 3u);
  EXPECT_EQ(mixed[0].label, "folder/c/mains");
  EXPECT_EQ(mixed[2].label, "folder/single");
  fs::rename(d / "folder" / "c", d / "c");
  fs::remove(d / "c" / "campaign.json");
  folder = load_runs((d / "c").string());
  ASSERT_EQ(folder.size(), 2u);
  EXPECT_EQ(folder[0].label, "c/battery");  // sorted by name
  fs::remove_all(d);
}

TEST(Report, RowsDifferingOnlyInThreadsStayApartAndOneRepHasNoSpread) {
  // `run peak` measures the same GEMM at 1 and 2 threads: both rows reach the reader.
  Measurement one = row("qkv", "cpu:onednn", kSlow), two = row("qkv", "cpu:onednn", kFast);
  one.threads = 1;
  two.threads = 2;
  Measurement single = row("proj", "cpu:onednn", {1.5e-3});
  single.threads = 2;
  const fs::path d = temp_dir("threads");
  const auto runs = load_runs(write_run(d / "a", make_run("a", {one, two, single})).string());
  const std::string md = report_markdown(runs, {});
  EXPECT_NE(md.find("qkv 100x200x50 (1 threads)"), std::string::npos) << md;
  EXPECT_NE(md.find("qkv 100x200x50 (2 threads)"), std::string::npos) << md;
  EXPECT_NE(md.find("(1 rep)"), std::string::npos) << md;
  EXPECT_EQ(md.find("[1.33-1.33]"), std::string::npos) << md;
  EXPECT_NE(md.find("1.33 (1 rep)"), std::string::npos) << md;
  // Within the run, its speedup over another backend has no interval either.
  Measurement other = row("proj", "cpu:llmc", kSlow);
  other.threads = 2;
  const auto with_base = load_runs(write_run(d / "c", make_run("c", {single, other})).string());
  const std::string md3 = report_markdown(with_base, {});
  EXPECT_NE(md3.find("(no interval: 1 rep)"), std::string::npos) << md3;
  const json j = report_json(runs, {});
  ASSERT_EQ(j["rows"].size(), 3u) << j.dump(1);
  EXPECT_EQ(j["rows"][0]["threads"], 1);
  EXPECT_EQ(j["rows"][1]["threads"], 2);
  // A second run with the rows at one repetition each: ratios say they have no interval.
  Measurement one_b = row("qkv", "cpu:onednn", {1.0e-3});
  one_b.threads = 1;
  const auto both = [&] {
    auto v = load_runs((d / "a").string());
    auto w = load_runs(write_run(d / "b", make_run("b", {one_b})).string());
    v.push_back(std::move(w[0]));
    return v;
  }();
  const std::string md2 = report_markdown(both, {});
  EXPECT_NE(md2.find("(no interval: 1 rep)"), std::string::npos) << md2;
  fs::remove_all(d);
}

TEST(Report, BadInputThrowsNamingTheFile) {
  const fs::path d = temp_dir("bad");
  auto expect_error = [](const std::string& dir, const std::string& names) {
    try {
      load_runs(dir);
      ADD_FAILURE() << "no error for " << dir;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
      EXPECT_FALSE(e.fix().empty());
    }
  };
  expect_error((d / "missing").string(), "not a directory");
  fs::create_directories(d / "empty");
  expect_error((d / "empty").string(), "neither a run dir");
  write(d / "trunc" / "run.json", "{\"schema_version\": 1, \"measurements\": [");
  expect_error((d / "trunc").string(), "trunc/run.json: not valid JSON");
  write(d / "v3" / "run.json", "{\"schema_version\": 3, \"measurements\": []}");
  expect_error((d / "v3").string(), "unsupported schema_version 3");
  write(d / "noop" / "run.json",
        "{\"schema_version\": 1, \"measurements\": [{\"workload\": \"gemm\", \"backend\": \"x\", \"dtype\": \"fp32\", "
        "\"time_s\": {}}]}");
  expect_error((d / "noop").string(), "malformed run.json");
  write(d / "arr" / "run.json", "[]");
  expect_error((d / "arr").string(), "malformed run.json");
  EXPECT_THROW(report_format("html", "--format"), InputError);
  EXPECT_STREQ(report_format("markdown", "--format").name, "md");
  fs::remove_all(d);
}

int run_cli(const std::string& args, std::string* err) {
  const fs::path d = temp_dir("io");
  const std::string cmd = std::string(FLOPWATT_BINARY) + " " + args + " >" + (d / "out").string() + " 2>" +
                          (d / "err").string() + " </dev/null";
  const int st = std::system(cmd.c_str());
  std::ifstream f(d / "err");
  *err = std::string((std::istreambuf_iterator<char>(f)), {});
  fs::remove_all(d);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(ReportCli, ExitCodes) {
  const fs::path d = temp_dir("cli");
  write_run(d / "ok", make_run("a", {row("qkv", "cpu:llmc", kSlow)}));
  write(d / "broken" / "run.json", "{\"schema_version\": 1, \"measurements\": [{}]}");
  std::string err;
  EXPECT_EQ(run_cli("report " + (d / "ok").string(), &err), 0) << err;
  for (const std::string& args : {"report " + (d / "broken").string(), "report " + (d / "nope").string(),
                                  "report " + (d / "ok").string() + " --format xml",
                                  "report " + (d / "ok").string() + " --baseline 7", std::string("report")}) {
    EXPECT_EQ(run_cli(args, &err), 2) << args;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << args << ": " << err;
  }
  fs::remove_all(d);
}

}  // namespace
}  // namespace flopwatt
