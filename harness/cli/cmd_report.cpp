// `flopwatt report DIR [DIR..]`: runs side by side (see harness/analysis/report.h).
#include <fmt/core.h>

#include <charconv>
#include <fstream>

#include "harness/cli/commands.h"
#include "harness/analysis/report.h"
#include "harness/output/safe_file.h"
#include "workloads/error.h"

namespace flopwatt {

namespace {

struct ReportArgs {
  std::vector<std::string> dirs;
  std::string format = "md";
  std::string baseline;
  std::string out;
  bool across_backends = false;
};

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

int run_report(ReportArgs& a) {
  const ReportFormat& format = report_format(a.format, "--format");
  std::vector<LoadedRun> runs;
  for (const auto& d : a.dirs) {
    auto v = load_runs(d);
    for (auto& r : v) runs.push_back(std::move(r));
  }
  // Two dirs with the same name (results/a/run and results/b/run) must stay apart in the tables.
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (std::size_t j = i + 1, k = 2; j < runs.size(); ++j)
      if (runs[j].label == runs[i].label) runs[j].label += "#" + std::to_string(k++);
  ReportOptions o;
  o.baseline = find_baseline(runs, a.baseline);
  o.across_backends = a.across_backends;
  const std::string text = format.render(runs, o);
  if (a.out.empty()) {
    fmt::print("{}", text);
  } else {
    OutputDir::parent_of(a.out, "--out").replace(std::filesystem::path(a.out).filename().string(), text);
  }
  return 0;
}

}  // namespace

void register_report(CLI::App& app, CliState& st) {
  auto* cmd = app.add_subcommand("report", "Compare runs side by side (run dirs, campaign dirs, or folders of runs)");
  auto a = std::make_shared<ReportArgs>();
  cmd->add_option("dirs", a->dirs, "Run directories (run.json), campaign directories (campaign.json) or folders of runs")
      ->required();
  cmd->add_option("--format", a->format, "md (default) | csv | json");
  cmd->add_option("--baseline", a->baseline, "Run the ratios are relative to: its number (1..) or label (default 1)");
  cmd->add_option("--out", a->out, "Write to this file instead of stdout");
  cmd->add_flag("--across-backends", a->across_backends,
                "Line up configurations whatever their backend (runs of one backend each, e.g. run gpt2 per "
                "--gemm-backend): the ratios become backend speedups");
  cmd->callback([a, &st] { st.exit_code = run_report(*a); });
}

}  // namespace flopwatt
