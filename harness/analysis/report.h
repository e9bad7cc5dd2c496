// `flopwatt report`: loads run directories (or campaign directories, whose
// phases are run directories), lines up their measurements by what was
// measured, and compares them side by side: ratios of medians with an
// interval from both runs' spread. The loading, row matching and energy-source
// choice are shared with the mains-vs-battery comparison (harness/analysis/campaign.h).
#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/output/headline_view.h"
#include "harness/output/run_model.h"

namespace flopwatt {

struct LoadedRun {
  std::string label;  // shown in tables: the run dir's name, or <campaign>/<state>[/<part>]
  std::string dir;
  Run run;
};

// Reads one run.json; throws InputError naming the file (unreadable, not JSON,
// wrong schema_version, missing fields) with the fix.
Run load_run_file(const std::string& path);
// load_run_file's two halves, for a caller that looks at the text before
// parsing it (store import skips runs it already has by their run_id).
std::string read_run_text(const std::string& path);
Run run_from_text(const std::string& path, const std::string& text);
// A run dir (run.json), a campaign dir (campaign.json listing its phases' run
// dirs) or a dir whose direct subdirectories are run dirs; throws InputError
// when `dir` is none of these.
std::vector<LoadedRun> load_runs(const std::string& dir);

// What a measurement measured, without the backend ("gemm qkv fwd fp32 256x2304x768");
// rows of different runs or backends with the same key are comparable.
std::string config_key(const Measurement& m);
// Readable name of the configuration for tables: "qkv fwd 256x2304x768", "step", "attn bwd L3".
std::string config_label(const Measurement& m);
// Measurements worth comparing: ran (not skipped), have a rate, and are not a
// single training step of a multi-step run (those are summarized elsewhere).
bool comparable(const Measurement& m);

// Which source a row's FLOP/J is read from, and which two rows share:
// harness/output/headline_view.h (headline_of, shared_headline), the one rule.

// Among the backends that ran one configuration, the one the others are
// compared with: llm.c's own CPU matmul when present (the study's CPU
// baseline), else the first that is not the naive oracle.
std::string baseline_backend(const std::vector<std::string>& backends);

// num / den of FLOP/s: the ratio of the rates at the median times, with an
// interval from each run's spread (the worst-case combination of the two
// intervals, so it is wide rather than falsely tight).
struct RatioInterval {
  double ratio = 0;
  std::array<double, 2> ci95{0, 0};     // from each median's 95% CI
  std::array<double, 2> p10_p90{0, 0};  // from each run's p10..p90 of repetition times
};
std::optional<RatioInterval> rate_ratio(const Measurement& num, const Measurement& den);
// FLOP/s at a time quantile; 0 when the time is 0.
double rate_at(const Measurement& m, double time_s);


// One comparable configuration on one backend, and where each run measured it:
// the rows every report format shows (markdown, csv, json, html).
struct ReportRow {
  std::string key, backend;
  std::string label;                          // config_label, plus the thread count where rows differ only in it
  const Measurement* first = nullptr;         // for the descriptive columns
  std::vector<const Measurement*> per_run;    // nullptr: not measured (or skipped) in that run
  std::vector<std::string> skipped;           // per run: the reason, when skipped
};
// across_backends: one row per configuration whatever the backend, for runs
// that each ran one backend (the paper suite's `run gpt2` per GEMM backend).
std::vector<ReportRow> report_rows(const std::vector<LoadedRun>& runs, bool across_backends);

struct ReportOptions {
  std::size_t baseline = 0;      // index into runs; ratios are run / baseline
  bool across_backends = false;  // match configurations whatever the backend (one backend per run)
};
nlohmann::json report_json(const std::vector<LoadedRun>& runs, const ReportOptions& o);
std::string report_markdown(const std::vector<LoadedRun>& runs, const ReportOptions& o);
std::string report_csv(const std::vector<LoadedRun>& runs, const ReportOptions& o);

// The report's output formats, picked by name: md (or markdown), csv, json.
struct ReportFormat {
  const char* name;
  const char* alias;  // another accepted name, or ""
  std::string (*render)(const std::vector<LoadedRun>& runs, const ReportOptions& o);
};
// Throws InputError naming `flag` for an unknown name, with the valid ones.
const ReportFormat& report_format(const std::string& name, const std::string& flag);

}  // namespace flopwatt
