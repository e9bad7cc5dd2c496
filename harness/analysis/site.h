// `flopwatt site`: a static site from the results store, as asv's `publish`
// makes one: an index of machines and series, one page per series with its
// history (FLOP/s and FLOP/J over the stored runs, each point linking to its
// run's page, change points marked by the test `history` uses), and one page
// per run (its HTML report). Pages share one copy of Chart.js in assets/.
//
// Built incrementally: a file is written only when its bytes change, and a
// run's page (a stored run never changes) is rendered only when the site's
// manifest (site.json) does not list it under the same page generator.
#pragma once
#include <cstddef>
#include <string>

#include "harness/analysis/html_report.h"
#include "harness/store/store.h"

namespace flopwatt {

struct SiteOptions {
  std::string out;          // the site's directory (created)
  double threshold = 0.05;  // change points: a step larger than this fraction (history's --threshold / 100)
};

struct SiteStats {
  std::size_t runs = 0, series = 0, machines = 0;
  std::size_t written = 0;    // files whose bytes changed
  std::size_t unchanged = 0;  // files rendered or kept and left as they were
  std::size_t removed = 0;    // pages of runs and series no longer in the store
};

// Throws InputError naming --out when the directory cannot be written.
SiteStats build_site(store::Store& s, const SiteOptions& o, const ChartJs& chart);

// A run's page, relative to the site's root: runs/<id>.html, the id kept
// where it is a plain file name and made one (with a hash of it) where not.
std::string site_run_page(const std::string& run_id);

}  // namespace flopwatt
