// `flopwatt site --out DIR`: a static site of the results store (see harness/analysis/site.h).
#include <fmt/core.h>

#include <chrono>
#include <cmath>

#include "harness/analysis/site.h"
#include "harness/cli/commands.h"
#include "harness/output/text.h"
#include "workloads/error.h"

namespace flopwatt {

namespace {

struct SiteArgs {
  std::string out, store;
  double threshold_pct = 5;
};

int run_site(const SiteArgs& a) {
  if (a.out.empty()) throw InputError("--out", "is required", "pass the site's directory, e.g. --out site");
  if (!(a.threshold_pct > 0) || !std::isfinite(a.threshold_pct))
    throw InputError("--threshold", "must be a positive percentage", "pass for example --threshold 5");
  const ChartJs chart = load_chartjs();
  const auto t0 = std::chrono::steady_clock::now();
  auto s = store::Store::open(store::resolve(a.store), false);
  const SiteStats st = build_site(*s, SiteOptions{a.out, a.threshold_pct / 100}, chart);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("site {}: {} run(s), {} series on {} machine(s); {} file(s) written, {} unchanged, {} removed ({:.1f} s). Open "
             "{}/index.html, or publish the folder (python3 -m http.server -d {})\n",
             a.out, st.runs, st.series, st.machines, st.written, st.unchanged, st.removed, secs, a.out, a.out);
  return 0;
}

}  // namespace

void register_site(CLI::App& app, CliState& st) {
  auto* cmd = app.add_subcommand(
      "site", "A static site of the results store: machines and series, each series' history with its change "
              "points, one page per run; rebuilt incrementally");
  auto a = std::make_shared<SiteArgs>();
  cmd->add_option("--out", a->out, "The site's directory (created; files are replaced only when they change)");
  cmd->add_option("--store", a->store,
                  "Results store: a SQLite file or a postgresql:// URI / libpq connection string (default "
                  "$FLOPWATT_STORE, else $XDG_DATA_HOME/flopwatt/results.sqlite3)");
  cmd->add_option("--threshold", a->threshold_pct, "Change-point threshold in percent, as `history` (default 5)");
  cmd->callback([a, &st] { st.exit_code = store::naming_store(a->store, [&] { return run_site(*a); }); });
}

}  // namespace flopwatt
