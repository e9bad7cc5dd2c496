#include "harness/prom/run_metrics.h"

#include <map>

#include "harness/output/headline_view.h"
#include "harness/prom/families.h"

namespace flopwatt::prom {

std::string machine_name(const Run& run) {
  for (const char* key : {"machine_label", "hostname"})
    if (auto it = run.context.find(key); it != run.context.end() && it->is_string() && !it->get<std::string>().empty())
      return it->get<std::string>();
  return "unknown";
}

std::vector<ResultRow> result_rows(const Run& run) {
  std::vector<ResultRow> rows;
  std::map<std::string, std::size_t> at;  // config and backend -> index in rows
  const std::string machine = machine_name(run);
  const std::string started = run.context.value("started_utc", std::string());
  for (const Measurement& m : run.measurements) {
    if (m.skipped || m.reps <= 0) continue;
    ResultRow r;
    r.machine = machine;
    r.workload = m.workload;
    r.op = m.op;
    r.config = config_label(m);
    r.backend = m.backend;
    r.dtype = m.dtype;
    r.run_id = run.run_id;
    r.started_utc = started;
    r.flop_per_s = m.flop_per_s;
    r.time_s = m.time_s.median;
    // The row's own judgement, never the run's summary headline.
    const HeadlineView h = headline_of(run, m);
    if (h.source)
      if (auto it = m.energy.find(*h.source); it != m.energy.end()) {
        r.source = h.source;
        r.flop_per_j = it->second.flop_per_j;
        r.energy_j = it->second.j;
      }
    const std::string key = r.config + '\n' + r.backend;
    if (auto it = at.find(key); it != at.end()) {
      rows[it->second] = std::move(r);
    } else {
      at[key] = rows.size();
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

namespace {

Labels row_labels(const ResultRow& r, bool with_machine) {
  Labels l;
  if (with_machine) l.emplace_back("machine", r.machine);
  l.insert(l.end(), {{"workload", r.workload}, {"op", r.op}, {"config", r.config}, {"backend", r.backend},
                     {"dtype", r.dtype}});
  return l;
}

}  // namespace

std::vector<prometheus::MetricFamily> result_families(const std::vector<ResultRow>& rows, bool with_machine) {
  using prometheus::MetricType;
  auto fps = family("flopwatt_result_flop_per_second", "FLOP per second of the latest result (FLOP / median repetition time)",
                    MetricType::Gauge);
  auto time = family("flopwatt_result_time_seconds", "Median repetition time of the latest result", MetricType::Gauge);
  auto fpj = family("flopwatt_result_flop_per_joule",
                    "FLOP per joule of the latest result, from the source its window judged the headline",
                    MetricType::Gauge);
  auto energy = family("flopwatt_result_energy_joules",
                       "Energy of the latest result's window, from the source its window judged the headline",
                       MetricType::Gauge);
  for (const ResultRow& r : rows) {
    Labels l = row_labels(r, with_machine);
    add_value(fps, l, r.flop_per_s);
    add_value(time, l, r.time_s);
    if (!r.source) continue;
    l.emplace_back("source", *r.source);
    if (r.flop_per_j) add_value(fpj, l, *r.flop_per_j);
    if (r.energy_j) add_value(energy, l, *r.energy_j);
  }
  std::vector<prometheus::MetricFamily> out;
  for (auto* f : {&fps, &time, &fpj, &energy}) append_nonempty(out, std::move(*f));
  return out;
}

std::vector<prometheus::MetricFamily> run_push_families(const Run& run) {
  std::vector<prometheus::MetricFamily> out = result_families(result_rows(run), false);
  // Every window, not one per configuration: the histogram is of the run's windows.
  std::map<std::string, std::vector<double>> by_source;
  for (const Measurement& m : run.measurements) {
    if (m.skipped) continue;
    const HeadlineView h = headline_of(run, m);
    if (!h.source) continue;
    if (auto it = m.energy.find(*h.source); it != m.energy.end() && !it->second.gap)
      by_source[*h.source].push_back(it->second.j);
  }
  auto hist = family("flopwatt_run_window_energy_joules",
                     "Energy of the run's measurement windows, from each window's headline source",
                     prometheus::MetricType::Histogram);
  for (const auto& [source, js] : by_source) add_histogram(hist, {{"source", source}}, js, kWindowEnergyBounds);
  append_nonempty(out, std::move(hist));
  auto complete = family("flopwatt_run_complete", "1 when the run finished, 0 when it was interrupted",
                         prometheus::MetricType::Gauge);
  add_value(complete, {}, run.complete ? 1 : 0);
  out.push_back(std::move(complete));
  return out;
}

std::vector<prometheus::MetricFamily> meter_push_families(const std::map<std::string, WindowTally>& tallies) {
  using prometheus::MetricType;
  auto duration = family("flopwatt_meter_window_duration_seconds", "Durations of a Meter's judged windows, per window name",
                         MetricType::Histogram);
  auto energy = family("flopwatt_meter_window_energy_joules",
                       "Energy of a Meter's windows, from each window's headline source (windows without one are left out)",
                       MetricType::Histogram);
  auto flop = family("flopwatt_meter_window_flop_total",
                     "FLOP of the windows counted in flopwatt_meter_window_energy_joules, per headline source",
                     MetricType::Counter);
  for (const auto& [name, t] : tallies) {
    add_histogram(duration, {{"window", name}}, t.duration_s, kWindowDurationBounds);
    for (const auto& [source, h] : t.energy_j) {
      add_histogram(energy, {{"window", name}, {"source", source}}, h, kWindowEnergyBounds);
      add_value(flop, {{"window", name}, {"source", source}}, t.flop.at(source));
    }
  }
  std::vector<prometheus::MetricFamily> out;
  for (auto* f : {&duration, &energy, &flop}) append_nonempty(out, std::move(*f));
  return out;
}

}  // namespace flopwatt::prom
