#include "harness/output/console_writer.h"

#include "harness/output/headline_view.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

namespace flopwatt {

std::string si(double v, const char* unit) {
  const char* p[] = {"", "k", "M", "G", "T", "P"};
  int i = 0;
  double a = v < 0 ? -v : v;
  while (a >= 1000 && i < 5) a /= 1000, v /= 1000, ++i;
  return fmt::format("{:.3g} {}{}", v, p[i], unit);
}

void print_row_header(std::FILE* f) {
  fmt::print(f, "{:<16} {:<18} {:<20} {:>4} {:>6} {:>11} {:>12} {:>6} {:>6} {:>7} {:>8} {:>12}\n", "backend", "op",
             "MxNxK", "lay", "reps", "median", "FLOP/s", "%peak", "FLOP/B", "%roof", "verified", "FLOP/J");
}

void print_row(std::FILE* f, const Run& run, const Measurement& m) {
  const std::string shape = m.shape ? fmt::format("{}x{}x{}", m.shape->M, m.shape->N, m.shape->K) : "-";
  if (m.skipped) {
    fmt::print(f, "{:<16} {:<18} {:<20} skipped: {}\n", m.backend, m.op, shape, *m.skipped);
    return;
  }
  std::string fpj = "-";
  // The window's headline as the one rule chose it; none, no FLOP/J (never
  // whichever source comes first).
  const EnergyFigures* e = nullptr;
  if (const auto h = headline_of(run, m).source; h && m.energy.count(*h)) e = &m.energy.at(*h);
  // '!': a repetition stalled (> kStallRatio x the median), so this FLOP/J,
  // over the whole window, includes it while the median FLOP/s beside it does not.
  if (e && e->flop_per_j)
    fpj = si(*e->flop_per_j, "") + (e->confidence == "low" ? "?" : "") + (m.stalled.value_or(false) ? "!" : "");
  // %roof carries the binding ceiling's initial: "71%m" is 71% of the memory
  // roof; "!" after it, a roof exceeded (print_summary lists them).
  const std::string roof =
      m.fraction_of_roof ? fmt::format("{:.0f}%{}{}", 100 * *m.fraction_of_roof,
                                       m.roof_bound ? m.roof_bound->substr(0, 1) : "",
                                       *m.fraction_of_roof > kRoofTolerance ? "!" : "")
                         : "-";
  fmt::print(f, "{:<16} {:<18} {:<20} {:>4} {:>6} {:>11} {:>12} {:>6} {:>6} {:>7} {:>8} {:>12}{}\n", m.backend,
             m.op, shape, m.layout.value_or("-"), m.reps, si(m.time_s.median, "s"), si(m.flop_per_s, "FLOP/s"),
             m.fraction_of_peak ? fmt::format("{:.0f}%", 100 * *m.fraction_of_peak) : "-",
             // "#": over the DRAM bytes the memory controllers counted (the counters line says so).
             m.intensity ? fmt::format("{:.3g}{}", *m.intensity, m.intensity_basis == "measured" ? "#" : "") : "-",
             roof,
             m.verified ? (*m.verified ? "yes" : "FAILED") : "-", fpj, m.simulated ? "  [simulated]" : "");
  std::fflush(f);
}

void print_summary(std::FILE* f, const Run& run, const std::string& out_dir) {
  // Pivot: rows = (workload, op, pass, shape, dtype), columns = backends, cells =
  // GFLOP/s. The pass is part of the row: a GPT-2 op's fwd and bwd share op and
  // shape, and would otherwise overwrite each other's cell.
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string>;
  std::vector<std::string> backends;
  std::vector<Key> keys;
  std::map<Key, std::map<std::string, const Measurement*>> cell;
  for (const auto& m : run.measurements) {
    if (m.skipped || (m.workload == "gpt2" && m.op != "step" && m.layer)) continue;
    const std::string shape = m.shape ? fmt::format("{}x{}x{}", m.shape->M, m.shape->N, m.shape->K) : "";
    const Key key{m.workload, m.op, m.pass.value_or(""), shape, m.dtype};
    if (!cell.count(key)) keys.push_back(key);
    if (std::find(backends.begin(), backends.end(), m.backend) == backends.end()) backends.push_back(m.backend);
    cell[key][m.backend] = &m;
  }
  static constexpr const char* kRow = "{:<8} {:<18} {:<4} {:<19} {:<5}";  // header and rows line up
  if (keys.empty()) {
    fmt::print(f, "\nno measurements\n");
  } else {
    // The rows' own headlines, summarised: never a source no row's judgement chose.
    const RunHeadline h = run_headline(run);
    fmt::print(f, "\nSummary: GFLOP/s (median){}\n",
               h.source ? ", FLOP/J from " + *h.source : h.mixed() ? ", FLOP/J per row from its own source (" + h.text() + ")" : "");
    fmt::print(f, kRow, "workload", "op", "pass", "shape", "dtype");
    for (const auto& b : backends) fmt::print(f, " {:>16}", b);
    fmt::print(f, "\n");
    for (const auto& k : keys) {
      const auto& [workload, op, pass, shape, dtype] = k;
      fmt::print(f, kRow, workload, op, pass, shape, dtype);
      for (const auto& b : backends) {
        auto it = cell[k].find(b);
        if (it == cell[k].end()) {
          fmt::print(f, " {:>16}", "-");
          continue;
        }
        const Measurement& m = *it->second;
        std::string v = fmt::format("{:.1f}", m.flop_per_s / 1e9);
        if (m.verified && !*m.verified) v += "!";
        if (m.simulated) v += "*";
        fmt::print(f, " {:>16}", v);
      }
      fmt::print(f, "\n");
    }
    fmt::print(f, "(* simulated device time, ! failed verification)\n");
  }
  // The GPT-2 table lists its own (gpt2_runner.cpp); these are the rest.
  std::vector<Measurement> others;
  for (const auto& m : run.measurements)
    if (m.workload != "gpt2") others.push_back(m);
  for (const auto& r : rows_above_roof(others))
    fmt::print(f, "{}\n", above_roof_warning(r));
  std::size_t missing = 0;
  for (const auto& s : run.power_sources) missing += !s.available;
  bool any = false;
  for (const auto& s : run.power_sources) any = any || s.available;
  if (!any)
    fmt::print(f, "energy: no power source available here ({} candidates missing; `flopwatt sources` says why) - FLOP/s only\n",
               missing);
  fmt::print(f, "report: {}/run.json ({})\n", out_dir, run.complete ? "complete" : "INCOMPLETE");
}

}  // namespace flopwatt
