// `flopwatt report DIR [DIR..]`: runs side by side (see harness/analysis/report.h).
#include <fmt/core.h>

#include <charconv>
#include <fstream>
#include <map>

#include "harness/cli/commands.h"
#include "harness/analysis/bench_compare.h"
#include "harness/analysis/campaign.h"
#include "harness/analysis/html_report.h"
#include "harness/analysis/report.h"
#include "harness/output/safe_file.h"
#include "harness/output/text.h"
#include "harness/store/store.h"
#include "workloads/error.h"

namespace flopwatt {

namespace {

struct ReportArgs {
  std::vector<std::string> dirs;
  std::string format = "md";
  std::string baseline;
  std::string out;
  bool across_backends = false;
  bool paper = false;
  double alpha = kUTestAlpha;
  // A fleet from the results store: the newest run of each group side by side.
  std::string store, group_by;
  store::ListFilter filter;
};

// The group a stored run belongs to, by the --group-by keys: machine (its
// label, else its id) and supply (mains, battery or unknown at the start).
std::string group_of(const store::RunSummary& s, const Run& run, const std::vector<std::string>& keys) {
  std::vector<std::string> parts;
  for (const auto& k : keys) {
    if (k == "machine") parts.push_back(s.machine_label.empty() ? s.machine_id : s.machine_label);
    else if (k == "supply")
      parts.push_back(run_supply_state(run).value_or("unknown"));
    else if (k == "command") {
      parts.push_back(s.command);
    }
  }
  return join(parts, "/");
}

std::vector<LoadedRun> fleet_runs(const ReportArgs& a) {
  const auto keys = split_list(a.group_by.empty() ? "machine,supply" : a.group_by);
  for (const auto& k : keys)
    if (k != "machine" && k != "supply" && k != "command")
      throw InputError("--group-by " + a.group_by, "unknown key '" + k + "'", "use machine, supply and/or command");
  auto s = store::Store::open(store::resolve(a.store), false);
  std::map<std::string, LoadedRun> newest;  // list() is oldest first: later runs replace earlier ones
  for (const auto& r : s->list(a.filter)) {
    LoadedRun lr;
    lr.run = run_from_json(nlohmann::json::parse(*s->run_json(r.run_id)));
    lr.label = group_of(r, lr.run, keys);
    lr.dir = r.run_id;
    newest[lr.label] = std::move(lr);
  }
  if (newest.empty())
    throw InputError("--store " + store::masked(s->target().spec), "holds no run that matches",
                     "record runs first, or loosen --tag, --since, --machine");
  std::vector<LoadedRun> runs;
  for (auto& [k, v] : newest) runs.push_back(std::move(v));
  return runs;
}

std::size_t find_baseline(const std::vector<LoadedRun>& runs, const std::string& b) {
  if (b.empty()) return 0;
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (runs[i].label == b) return i;
  if (b.find_first_not_of("0123456789") == std::string::npos) {
    // Digits only, but any number of them: a count too large for an integer names no run.
    std::size_t k = 0;
    const auto [end, ec] = std::from_chars(b.data(), b.data() + b.size(), k);
    if (ec == std::errc() && end == b.data() + b.size() && k >= 1 && k <= runs.size()) return k - 1;
  }
  std::string labels;
  for (const auto& r : runs) labels += (labels.empty() ? "" : ", ") + r.label;
  throw InputError("--baseline " + b, "names no loaded run", "pass a run number 1.." + std::to_string(runs.size()) +
                                                                 " or one of: " + labels);
}

void write_text(const ReportArgs& a, const std::string& text) {
  if (a.out.empty()) {
    fmt::print("{}", text);
  } else {
    OutputDir::parent_of(a.out, "--out").replace(std::filesystem::path(a.out).filename().string(), text);
  }
}

// Two flopwatt_bench JSON files: the first is the baseline.
int run_bench_compare(const ReportArgs& a) {
  if (a.dirs.size() != 2)
    throw InputError(a.dirs[0], "flopwatt_bench JSON files are compared in pairs, " + std::to_string(a.dirs.size()) +
                                    " given", "pass exactly two: the baseline, then the contender");
  if (!a.baseline.empty() || a.across_backends)
    throw InputError(!a.baseline.empty() ? "--baseline" : "--across-backends", "applies to run directories only",
                     "drop it: with two flopwatt_bench files the first is the baseline");
  if (!(a.alpha > 0 && a.alpha < 1))
    throw InputError("--alpha " + shortest(a.alpha), "not a probability", "pass a value between 0 and 1, e.g. 0.05");
  if (a.format != "md" && a.format != "markdown" && a.format != "json" && a.format != "csv")
    throw InputError("--format " + a.format, "unknown format", "use md, csv or json");
  const BenchComparison c = compare_bench(load_bench_json(a.dirs[0]), load_bench_json(a.dirs[1]), a.alpha);
  if (a.format == "json") write_text(a, bench_comparison_json(c).dump(2) + "\n");
  else if (a.format == "csv") write_text(a, bench_comparison_csv(c));
  else write_text(a, bench_comparison_markdown(c));
  return 0;
}

// --paper: the runs sorted by the supply each started on, compared as a
// campaign compares its two phases (cpu:llmc the baseline, as in the study),
// and the study's four figures next to these.
int run_paper(const ReportArgs& a, const std::vector<LoadedRun>& runs) {
  if (!a.baseline.empty() || a.across_backends)
    throw InputError(!a.baseline.empty() ? "--baseline" : "--across-backends", "does not apply with --paper",
                     "drop it: --paper compares every backend with cpu:llmc, as the study did");
  if (a.format != "md" && a.format != "markdown" && a.format != "json" && a.format != "html")
    throw InputError("--format " + a.format, "not a format of --paper", "use md, json or html");
  if (a.format == "html") {
    HtmlOptions h;
    h.paper = true;
    h.title = "flopwatt report: Rösti & Franz (2025) side by side";
    write_text(a, report_html(runs, h, load_chartjs()));
    return 0;
  }
  const nlohmann::json f = paper_report(runs);
  if (a.format == "json") {
    write_text(a, f.dump(2) + "\n");
  } else {
    std::string md = paper_markdown(f);
    if (f.contains("assumed_mains")) md += "\n" + f["assumed_mains"].get<std::string>() + ".\n";
    write_text(a, md);
  }
  return 0;
}

void check_format(const ReportArgs& a) {
  if (a.format == "html") return;
  for (const char* f : {"md", "markdown", "csv", "json"})
    if (a.format == f) return;
  throw InputError("--format " + a.format, "unknown format", "use md, csv, json or html");
}

// --format html: one self-contained page (harness/analysis/html_report.h).
std::string render(const ReportArgs& a, const std::vector<LoadedRun>& runs, const ReportOptions& o,
                   store::Store* samples_from = nullptr) {
  if (a.format != "html") return report_format(a.format, "--format").render(runs, o);
  HtmlOptions h;
  h.report = o;
  if (samples_from)
    h.samples = [samples_from](const LoadedRun& r) { return samples_from->samples(r.dir); };
  return report_html(runs, h, load_chartjs());
}

int run_report(ReportArgs& a) {
  if (!a.store.empty() || !a.group_by.empty()) {
    if (!a.dirs.empty())
      throw InputError("--store", "reads runs from the store, not from directories", "drop the directories, or --store");
    check_format(a);
    std::vector<LoadedRun> runs = store::naming_store(a.store, [&] { return fleet_runs(a); });
    ReportOptions o;
    o.baseline = find_baseline(runs, a.baseline);
    o.across_backends = a.across_backends;
    write_text(a, store::naming_store(a.store, [&] {
                 auto samples = a.format == "html" ? store::Store::open(store::resolve(a.store), false) : nullptr;
                 return render(a, runs, o, samples.get());
               }));
    return 0;
  }
  if (a.dirs.empty()) throw InputError("report", "needs run directories, or --store", "pass DIR [DIR..]");
  std::size_t bench = 0;
  for (const auto& d : a.dirs) bench += is_bench_json(d) ? 1 : 0;
  if (bench == a.dirs.size()) return run_bench_compare(a);
  if (bench > 0)
    throw InputError(a.dirs[0], "mixes flopwatt_bench JSON files with run directories",
                     "compare two flopwatt_bench files, or run/campaign directories, not both");
  if (a.alpha != kUTestAlpha)
    throw InputError("--alpha", "applies to flopwatt_bench JSON files only", "drop it for run directories");
  check_format(a);  // an unknown format fails before any file is read
  std::vector<LoadedRun> runs;
  for (const auto& d : a.dirs) {
    auto v = load_runs(d);
    for (auto& r : v) runs.push_back(std::move(r));
  }
  // Two dirs with the same name (results/a/run and results/b/run) must stay apart in the tables.
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (std::size_t j = i + 1, k = 2; j < runs.size(); ++j)
      if (runs[j].label == runs[i].label) runs[j].label += "#" + std::to_string(k++);
  if (a.paper) return run_paper(a, runs);
  ReportOptions o;
  o.baseline = find_baseline(runs, a.baseline);
  o.across_backends = a.across_backends;
  write_text(a, render(a, runs, o));
  return 0;
}

}  // namespace

void register_report(CLI::App& app, CliState& st) {
  auto* cmd = app.add_subcommand(
      "report",
      "Compare runs side by side (run dirs, campaign dirs, or folders of runs), or two flopwatt_bench JSON files");
  auto a = std::make_shared<ReportArgs>();
  cmd->add_option("dirs", a->dirs,
                  "Run directories (run.json), campaign directories (campaign.json) or folders of runs; or two "
                  "flopwatt_bench --benchmark_format=json files (baseline first): time and energy counters per "
                  "benchmark with a Mann-Whitney U test on the repetitions");
  cmd->add_option("--alpha", a->alpha, "Significance level of the U test for flopwatt_bench files (default 0.05)");
  cmd->add_option("--format", a->format,
                  "md (default) | csv | json | html (one self-contained page with charts, for a browser offline)");
  cmd->add_option("--baseline", a->baseline, "Run the ratios are relative to: its number (1..) or label (default 1)");
  cmd->add_option("-o,--out", a->out, "Write to this file instead of stdout");
  cmd->add_flag("--paper", a->paper,
                "Rösti & Franz (2025)'s four figures from these GPT-2 runs (cpu:llmc and an NPU backend; on mains and "
                "on battery, told apart by each run's supply), next to the paper's");
  cmd->add_flag("--across-backends", a->across_backends,
                "Line up configurations whatever their backend (runs of one backend each, e.g. run gpt2 per "
                "--gemm-backend): the ratios become backend speedups");
  cmd->add_option("--store", a->store,
                  "Read the runs from a results store (SQLite file or postgresql:// URI) instead of directories");
  cmd->add_option("--group-by", a->group_by,
                  "With --store: the newest run of each group side by side; keys machine, supply, command "
                  "(default machine,supply)");
  cmd->add_option("--tag", a->filter.tag, "With --store: only runs with this tag");
  cmd->add_option("--since", a->filter.since, "With --store: only runs started at or after this UTC date");
  cmd->add_option("--machine", a->filter.machine, "With --store: only this machine (label, hostname or id)");
  cmd->callback([a, &st] { st.exit_code = run_report(*a); });
}

}  // namespace flopwatt
