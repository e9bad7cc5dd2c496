#include "harness/output/csv_writer.h"

#include <cstdio>
#include <set>

#include "harness/output/metrics.h"
#include "harness/output/text.h"

namespace flopwatt {

namespace {

// Columns before the time statistics, between them and the breakdown, and after it.
const char* const kHead[] = {"workload", "op",    "pass",           "layer",   "step",      "backend", "dtype",
                             "M",        "N",     "K",              "layout",  "count_per_step", "threads",
                             "simulated", "reps"};
const char* const kMiddle[] = {"flop",
                               "bytes",
                               "flop_per_s",
                               metric::kFlopPerSWindow.name.data(),
                               metric::kRepMaxOverMedian.name.data(),
                               metric::kStalled.name.data(),
                               "fraction_of_peak"};
const char* const kAfterRoof[] = {"verified", "verify_rel_err", "loss"};
const char* const kTail[] = {"skipped", "window/t0_ns", "window/t1_ns", "supply_changed"};

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}
template <class T>
std::string onum(const std::optional<T>& v) {
  return v ? num(double(*v)) : "";
}

std::set<std::string> counter_events(const Run& run) {
  std::set<std::string> ids;
  for (const auto& m : run.measurements)
    for (const auto& [event, v] : m.counters) ids.insert(event);
  return ids;
}

std::set<std::string> energy_ids(const Run& run) {
  std::set<std::string> ids;
  for (const auto& m : run.measurements)
    for (const auto& [id, f] : m.energy) ids.insert(id);
  return ids;
}

}  // namespace

std::vector<std::string> csv_columns(const Run& run) {
  std::vector<std::string> cols(std::begin(kHead), std::end(kHead));
  for (const Metric* m : kTimeColumns) cols.emplace_back(m->name);
  cols.insert(cols.end(), std::begin(kMiddle), std::end(kMiddle));
  for (const Metric* m : kRoofColumns) cols.emplace_back(m->name);
  cols.insert(cols.end(), std::begin(kAfterRoof), std::end(kAfterRoof));
  for (const Metric* m : kBreakdownColumns) cols.emplace_back(m->name);
  cols.insert(cols.end(), std::begin(kTail), std::end(kTail));
  for (const auto& id : energy_ids(run)) {
    for (const Metric* m : kEnergyColumns) cols.push_back("energy/" + id + "/" + std::string(m->name));
    cols.push_back("energy/" + id + "/confidence");
  }
  for (const auto& event : counter_events(run)) cols.push_back(std::string(metric::kCounters.name) + "/" + event);
  return cols;
}

void write_measurements_csv(const Run& run, std::ostream& os) {
  const auto cols = csv_columns(run);
  const auto ids = energy_ids(run);
  const auto events = counter_events(run);
  for (std::size_t i = 0; i < cols.size(); ++i) os << (i ? "," : "") << csv_escape(cols[i]);
  os << "\n";
  for (const auto& m : run.measurements) {
    const Breakdown* b = m.breakdown_s ? &*m.breakdown_s : nullptr;
    std::vector<std::string> row = {
        m.workload, m.op, m.pass.value_or(""), onum(m.layer), onum(m.step), m.backend, m.dtype,
        m.shape ? std::to_string(m.shape->M) : "", m.shape ? std::to_string(m.shape->N) : "",
        m.shape ? std::to_string(m.shape->K) : "", m.layout.value_or(""), onum(m.count_per_step), onum(m.threads),
        m.simulated ? "true" : "false", std::to_string(m.reps), num(m.time_s.median), num(m.time_s.p10),
        num(m.time_s.p90), num(m.time_s.ci95_lo), num(m.time_s.ci95_hi), num(m.time_s.total), num(m.flop),
        onum(m.bytes), num(m.flop_per_s), onum(m.flop_per_s_window), onum(m.rep_max_over_median),
        m.stalled ? (*m.stalled ? "true" : "false") : "", onum(m.fraction_of_peak),
        onum(m.intensity), onum(m.roof_flop_per_s), onum(m.fraction_of_roof), m.roof_bound.value_or(""),
        m.memory_pattern.value_or(""), onum(m.working_set_bytes), m.roof_ceiling.value_or(""), onum(m.roof_time_s),
        onum(m.dram_bytes_measured), m.intensity_basis.value_or(""), m.verified ? (*m.verified ? "true" : "false") : "", onum(m.verify_rel_err), onum(m.loss),
        b ? num(b->copy_in) : "", b ? num(b->compute) : "", b ? num(b->copy_out) : "",
        b ? num(b->submit) : "", b ? num(b->reconfigure) : "", m.skipped.value_or(""),
        m.window_ns ? std::to_string((*m.window_ns)[0]) : "", m.window_ns ? std::to_string((*m.window_ns)[1]) : "",
        m.supply_changed ? (*m.supply_changed ? "true" : "false") : ""};
    for (const auto& id : ids) {
      auto it = m.energy.find(id);
      if (it == m.energy.end()) {
        row.insert(row.end(), std::size(kEnergyColumns) + 1, "");
        continue;
      }
      const auto& f = it->second;
      row.insert(row.end(), {num(f.j), num(f.avg_power_w), onum(f.net_j), onum(f.flop_per_j),
                             onum(f.flop_per_j_net), f.confidence});
    }
    for (const auto& event : events) {
      auto it = m.counters.find(event);
      row.push_back(it == m.counters.end() ? "" : onum(it->second));
    }
    for (std::size_t i = 0; i < row.size(); ++i) os << (i ? "," : "") << csv_escape(row[i]);
    os << "\n";
  }
}

}  // namespace flopwatt
