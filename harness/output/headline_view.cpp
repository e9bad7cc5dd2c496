#include "harness/output/headline_view.h"

#include <algorithm>
#include <map>

namespace flopwatt {

namespace {

std::optional<bool> ac_online(const Run& run) {
  const auto it = run.context.find("ac_online");
  if (it == run.context.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

}  // namespace

std::string source_domain(const Run& run, const std::string& id) {
  for (const auto& s : run.power_sources)
    if (s.id == id) return s.domain;
  if (id.rfind("npu-model:", 0) == 0) return "npu";
  if (id.rfind("battery", 0) == 0) return "battery";
  return "";
}


bool on_mains(const Run& run) { return ac_online(run).value_or(false); }

std::vector<power::HeadlineCandidate> stored_candidates(const Run& run, const Measurement& m) {
  std::vector<power::HeadlineCandidate> out;
  const std::optional<bool> mains = ac_online(run);
  for (const auto& [id, f] : m.energy) {
    power::HeadlineCandidate h;
    h.id = id;
    h.domain = source_domain(run, id);
    h.has_energy = f.flop_per_j.has_value();
    // The run removed FLOP/J from every battery figure outside a discharge.
    if (h.domain == "battery") h.charge = h.has_energy ? power::ChargeState::Discharging : power::ChargeState::Unknown;
    h.low_confidence = f.confidence == "low";
    h.why_low = f.why_low;
    h.on_mains = mains;
    h.avg_power_w = f.avg_power_w;
    h.flop_per_j = f.flop_per_j;
    h.device = power::device_class_of_backend(m.backend);
    out.push_back(std::move(h));
  }
  return out;
}

HeadlineView headline_of(const Run& run, const Measurement& m) {
  if (m.headline_source || m.headline_why) return {m.headline_source, m.headline_why.value_or("")};
  const power::HeadlineChoice c = power::choose_headline(stored_candidates(run, m));
  return {c.source, c.why};
}

RunHeadline run_headline(const Run& run) {
  RunHeadline h;
  std::map<std::string, int> rows;
  for (const auto& m : run.measurements) {
    if (m.energy.empty()) continue;
    if (const auto s = headline_of(run, m).source) ++rows[*s];
    else ++h.rows_without;
  }
  h.sources.assign(rows.begin(), rows.end());
  std::stable_sort(h.sources.begin(), h.sources.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (h.sources.size() == 1) h.source = h.sources.front().first;
  return h;
}

std::string RunHeadline::json_value() const {
  if (source) return *source;
  return mixed() ? "mixed" : "";
}

std::string RunHeadline::text() const {
  if (source) return *source;
  if (!mixed()) return "none";
  std::string out = "mixed: ";
  for (std::size_t i = 0; i < sources.size(); ++i)
    out += (i ? ", " : "") + sources[i].first + " (" + std::to_string(sources[i].second) +
           (sources[i].second == 1 ? " row)" : " rows)");
  return out;
}

std::optional<std::string> shared_headline(const Run& a, const Measurement& ma, const Run& b, const Measurement& mb) {
  const auto ha = headline_of(a, ma).source, hb = headline_of(b, mb).source;
  if (ha && hb && *ha == *hb) return ha;
  std::vector<power::HeadlineCandidate> both;
  for (auto& h : stored_candidates(a, ma)) {
    const auto it = mb.energy.find(h.id);
    if (it == mb.energy.end() || !it->second.flop_per_j) continue;
    // A battery compares only where both runs ran from it alone.
    if (on_mains(a) || on_mains(b)) h.on_mains = true;
    both.push_back(std::move(h));
  }
  return power::choose_headline(both).source;
}

}  // namespace flopwatt
