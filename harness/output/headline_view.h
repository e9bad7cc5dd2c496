// The headline of a recorded measurement, for every front end that reads a
// run (the console, report, campaign, the gradient-order report): the source
// the run judged for that window (Measurement::headline_source), or, for runs
// written before windows recorded it, power::choose_headline applied to the
// figures the run stored. Either way power/headline.h's rule decides.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/output/run_model.h"
#include "power/headline.h"

namespace flopwatt {

struct HeadlineView {
  std::optional<std::string> source;  // nullopt: no source qualified
  std::string why;
};

// The stored figures of one measurement as headline candidates: FLOP/J
// present is energy the run kept (it removes FLOP/J from every figure the rule
// refuses, with why_low), the supply from the run's context.
std::vector<power::HeadlineCandidate> stored_candidates(const Run& run, const Measurement& m);

HeadlineView headline_of(const Run& run, const Measurement& m);

// The source two measurements can be compared on: their common headline, else
// the rule applied to the sources both kept FLOP/J for (a battery only when
// both runs ran from it).
std::optional<std::string> shared_headline(const Run& a, const Measurement& ma, const Run& b, const Measurement& mb);

// The run's headline, derived from its rows' own judgements (headline_of), never chosen on its own:
// a summary of which source each row's FLOP/J comes from, for the lines and columns that name one
// source for a whole run (console summary, run.json's headline_source, the store's runs table).
struct RunHeadline {
  // The source every row with a headline uses; nullopt when no row has one or rows use several.
  std::optional<std::string> source;
  // Each source some row's headline is from, with its row count, most rows first.
  std::vector<std::pair<std::string, int>> sources;
  int rows_without = 0;  // rows with energy figures for which no source qualified
  bool mixed() const { return sources.size() > 1; }
  // run.json's headline_source: the one source, "mixed", or null (empty here).
  std::string json_value() const;
  // "rapl-powercap:package", "mixed: battery:BAT0 (3 rows), hwmon:amdgpu:PPT (1 row)", "none".
  std::string text() const;
};
RunHeadline run_headline(const Run& run);

// Domain of a source id in this run ("battery", "package", "npu" for modelled sources).
std::string source_domain(const Run& run, const std::string& id);

// Whether the run started on mains (context.ac_online); false when unknown.
bool on_mains(const Run& run);

}  // namespace flopwatt
