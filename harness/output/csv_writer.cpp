#include "harness/output/csv_writer.h"

#include <cstdio>
#include <set>

#include "harness/output/text.h"

namespace flopwatt {

namespace {

const char* const kBase[] = {
    "workload", "op", "pass", "layer", "step", "backend", "dtype", "M", "N", "K", "layout",
    "count_per_step", "threads", "simulated", "reps", "time/median_s", "time/p10_s", "time/p90_s",
    "time/ci95_lo_s", "time/ci95_hi_s", "time/total_s", "flop", "bytes", "flop_per_s",
    "fraction_of_peak", "verified", "verify_rel_err", "loss", "breakdown/copy_in_s",
    "breakdown/compute_s", "breakdown/copy_out_s", "breakdown/submit_s", "breakdown/reconfigure_s",
    "skipped", "window/t0_ns", "window/t1_ns"};
const char* const kEnergy[] = {"j", "avg_power_w", "net_j", "flop_per_j", "flop_per_j_net", "confidence"};

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}
template <class T>
std::string onum(const std::optional<T>& v) {
  return v ? num(double(*v)) : "";
}

std::set<std::string> energy_ids(const Run& run) {
  std::set<std::string> ids;
  for (const auto& m : run.measurements)
    for (const auto& [id, f] : m.energy) ids.insert(id);
  return ids;
}

}  // namespace

std::vector<std::string> csv_columns(const Run& run) {
  std::vector<std::string> cols(std::begin(kBase), std::end(kBase));
  for (const auto& id : energy_ids(run))
    for (const char* f : kEnergy) cols.push_back("energy/" + id + "/" + f);
  return cols;
}

void write_measurements_csv(const Run& run, std::ostream& os) {
  const auto cols = csv_columns(run);
  const auto ids = energy_ids(run);
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
        onum(m.bytes), num(m.flop_per_s), onum(m.fraction_of_peak),
        m.verified ? (*m.verified ? "true" : "false") : "", onum(m.verify_rel_err), onum(m.loss),
        b ? num(b->copy_in) : "", b ? num(b->compute) : "", b ? num(b->copy_out) : "",
        b ? num(b->submit) : "", b ? num(b->reconfigure) : "", m.skipped.value_or(""),
        m.window_ns ? std::to_string((*m.window_ns)[0]) : "", m.window_ns ? std::to_string((*m.window_ns)[1]) : ""};
    for (const auto& id : ids) {
      auto it = m.energy.find(id);
      if (it == m.energy.end()) {
        row.insert(row.end(), std::size(kEnergy), "");
        continue;
      }
      const auto& f = it->second;
      row.insert(row.end(), {num(f.j), num(f.avg_power_w), onum(f.net_j), onum(f.flop_per_j),
                             onum(f.flop_per_j_net), f.confidence});
    }
    for (std::size_t i = 0; i < row.size(); ++i) os << (i ? "," : "") << csv_escape(row[i]);
    os << "\n";
  }
}

}  // namespace flopwatt
