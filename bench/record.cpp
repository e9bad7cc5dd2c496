#include "bench/record.h"

#include <algorithm>

#include <fmt/core.h>

#include "flopwatt/meter.h"
#include "harness/output/text.h"
#include "harness/run/statistics.h"

namespace flopwatt::gbench {

bool RecordingReporter::ReportContext(const Context& c) {
  display_->SetOutputStream(&GetOutputStream());
  display_->SetErrorStream(&GetErrorStream());
  return display_->ReportContext(c);
}

void RecordingReporter::ReportRuns(const std::vector<Run>& runs) {
  display_->ReportRuns(runs);
  for (const auto& r : runs) {
    if (r.run_type != Run::RT_Iteration || r.error_occurred || r.iterations <= 0) continue;
    const std::string name = r.run_name.str();
    if (!samples_.count(name)) order_.push_back(name);
    Sample s;
    s.s_per_iter = r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
    for (const auto& [k, v] : r.counters) s.counters[k] = v.value;
    s.source = label_source(r.report_label);
    samples_[name].push_back(std::move(s));
  }
}

void RecordingReporter::Finalize() { display_->Finalize(); }

namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<Measurement> RecordingReporter::measurements(int threads) const {
  std::vector<Measurement> out;
  for (const auto& name : order_) {
    const auto& ss = samples_.at(name);
    // gemm/<backend>/<op>, gpt2/<preset>/<backend>/step, gradorder/<backend>/<layer>/<order>;
    // Google Benchmark's own parts ("repeats:5", "min_time:0.1") hold a ':' too but no backend's prefix.
    const auto parts = split_list([&] {
      std::string s = name;
      std::replace(s.begin(), s.end(), '/', ',');
      return s;
    }());
    Measurement m;
    m.workload = parts.empty() ? name : parts[0];
    std::vector<std::string> op;
    for (std::size_t i = 1; i < parts.size(); ++i) {
      const auto& p = parts[i];
      const bool backend = m.backend.empty() && (p.rfind("cpu:", 0) == 0 || p.rfind("npu:", 0) == 0);
      if (backend) m.backend = p;
      else if (p.find(':') == std::string::npos && p != "real_time" && p != "process_time" && p != "manual_time")
        op.push_back(p);
    }
    m.op = join(op, "/");
    m.threads = threads;
    // The energy of the repetitions whose loops named the source most of them did (each loop's
    // own judged headline, from its label); the others' joules are another meter's.
    std::map<std::string, int> by_source;
    for (const auto& s : ss)
      if (s.source) ++by_source[*s.source];
    std::optional<std::string> source;
    for (const auto& [id, n] : by_source)
      if (!source || n > by_source.at(*source)) source = id;
    std::vector<double> flops, jpi, w, fpj;
    for (const auto& s : ss) {
      m.rep_times_s.push_back(s.s_per_iter);
      if (auto it = s.counters.find("FLOP/iter"); it != s.counters.end()) flops.push_back(it->second);
      else if (auto rate = s.counters.find("FLOP/s"); rate != s.counters.end()) flops.push_back(rate->second * s.s_per_iter);
      if (!source || s.source != source) continue;
      if (auto it = s.counters.find("J/iter"); it != s.counters.end()) jpi.push_back(it->second);
      if (auto it = s.counters.find("W"); it != s.counters.end()) w.push_back(it->second);
      if (auto it = s.counters.find("FLOP/J"); it != s.counters.end()) fpj.push_back(it->second);
    }
    m.reps = static_cast<int>(m.rep_times_s.size());
    m.time_s = summarize(m.rep_times_s);
    m.flop = flops.empty() ? 0 : median_of(flops);
    m.flop_per_s = m.time_s.median > 0 ? m.flop / m.time_s.median : 0;
    if (source && !jpi.empty()) {
      EnergyFigures e;
      e.j = median_of(jpi);
      e.avg_power_w = w.empty() ? 0 : median_of(w);
      if (!fpj.empty()) e.flop_per_j = median_of(fpj);
      m.energy[*source] = e;
      m.headline_source = source;
      m.headline_why = fmt::format("the source each loop's own judged headline named, in {} of {} repetitions",
                                   by_source.at(*source), ss.size());
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace flopwatt::gbench
