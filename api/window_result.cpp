#include "window_result.h"

#include <optional>

namespace flopwatt {

std::map<std::string, std::string> source_domains(const EnergyMeter& energy) {
  std::map<std::string, std::string> d;
  for (const auto& s : energy.status()) d[s.id] = s.domain;
  return d;
}

WindowResult timing_only(const WindowSpan& span, std::string why) {
  WindowResult r;
  r.duration_s = double(span.t1_ns - span.t0_ns) * 1e-9;
  r.flop = span.flop;
  if (span.flop > 0 && r.duration_s > 0) r.flop_per_s = span.flop / r.duration_s;
  r.headline_why = std::move(why);
  return r;
}

WindowResult window_result(EnergyMeter& energy, power::SupplyMonitor* supply,
                           const std::map<std::string, std::string>& domains, const WindowSpan& span) {
  WindowResult r = timing_only(span, "no power source is sampled (`flopwatt sources` says why)");
  if (!energy.active()) return r;
  Measurement m;
  m.energy = energy.window(span.t0_ns, span.t1_ns, span.flop, /*net=*/false, span.wait_all);
  // One copy of the supply's track serves the judgement, the change check and
  // the state's name. Polled after t1, so the window's end is covered.
  std::optional<power::SupplyTrack> track;
  if (supply) {
    supply->cover(span.t1_ns);
    track = supply->track();
  }
  judge_window(m, energy, track ? &*track : nullptr, span.t0_ns, span.t1_ns);
  if (track) {
    if (track->changed_during(span.t0_ns, span.t1_ns)) {
      r.supply = "changed";
      r.notes.push_back("the power supply changed during the window: its sources read two states");
    } else if (const power::Supply s = track->supply_over(span.t0_ns, span.t1_ns); s != power::Supply::Unknown) {
      r.supply = power::to_string(s);
    }
  }
  if (r.headline = std::move(m.headline_source); r.headline) {
    const EnergyFigures& f = m.energy.at(*r.headline);
    r.energy_j = f.j;
    r.avg_power_w = f.avg_power_w;
    r.flop_per_j = f.flop_per_j;
  }
  r.headline_why = std::move(m.headline_why).value_or("");
  r.sources.reserve(m.energy.size());
  r.notes.reserve(r.notes.size() + m.energy.size());
  // m is this window's own: its reasons move into the result.
  for (auto& [id, f] : m.energy) {
    SourceFigure& s = r.sources.emplace_back();
    s.id = id;
    if (auto it = domains.find(id); it != domains.end()) s.domain = it->second;
    s.energy_j = f.j;
    s.avg_power_w = f.avg_power_w;
    s.flop_per_j = f.flop_per_j;
    s.low_confidence = f.confidence == "low";
    s.why_low = std::move(f.why_low);
    s.gap = f.gap;
    if (f.gap) r.notes.push_back(id + " was gone for part of the window: no figure from it");
  }
  return r;
}

}  // namespace flopwatt
