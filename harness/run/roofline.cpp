#include "harness/run/roofline.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "cpu/perf_counters.h"
#include "harness/output/headline_view.h"
#include "harness/output/text.h"

namespace flopwatt {

using nlohmann::json;

std::optional<MemoryCeiling> Ceilings::dram() const {
  std::optional<MemoryCeiling> best;
  for (const auto& m : memory)
    if (m.name.rfind("dram_", 0) == 0 && (!best || m.bytes_per_s > best->bytes_per_s)) best = m;
  return best;
}

std::optional<MemoryCeiling> Ceilings::memory_for(const std::string& pattern, double working_set_bytes) const {
  std::string level = "dram";
  if (working_set_bytes > 0)
    for (const char* l : {"l1", "l2", "llc"})
      if (auto it = capacity_bytes.find(l); it != capacity_bytes.end() && working_set_bytes <= it->second) {
        level = l;
        break;
      }
  std::optional<MemoryCeiling> exact, any;
  const std::string prefix = level + "_";
  for (const auto& m : memory) {
    if (m.name.rfind(prefix, 0) != 0) continue;
    const std::string stream = m.name.substr(prefix.size());
    if (!any || m.bytes_per_s > any->bytes_per_s) any = m;
    if (!pattern.empty() && (stream == pattern || stream == pattern + "_nt") &&
        (!exact || m.bytes_per_s > exact->bytes_per_s))
      exact = m;
  }
  if (exact) return exact;
  if (any) return any;
  return dram();
}

std::optional<double> Ceilings::peak(const std::string& dtype) const {
  if (auto it = peak_flop_per_s.find(dtype); it != peak_flop_per_s.end() && it->second > 0) return it->second;
  if (auto it = peak_flop_per_s.find("fp32"); it != peak_flop_per_s.end() && it->second > 0) return it->second;
  return std::nullopt;
}

std::optional<RoofPoint> place_on_roof(double flop, double bytes, double flop_per_s, double peak, double bw) {
  if (!(flop > 0 && bytes > 0 && peak > 0 && bw > 0) || !std::isfinite(flop_per_s)) return std::nullopt;
  RoofPoint p;
  p.intensity = flop / bytes;
  const double memory_roof = p.intensity * bw;
  p.bound = memory_roof >= peak ? "compute" : "memory";
  p.attainable_flop_per_s = std::min(peak, memory_roof);
  p.fraction = flop_per_s / p.attainable_flop_per_s;
  return p;
}

std::optional<Ceilings> ceilings_from_peak_run(const Run& run, int threads) {
  Ceilings c;
  c.label = "cpu";
  c.threads = threads;
  for (const auto& m : run.measurements) {
    if (m.skipped || m.threads.value_or(0) != threads) continue;
    if (m.workload == "peak" && m.flop_per_s > 0) {
      double& p = c.peak_flop_per_s[m.dtype];
      p = std::max(p, m.flop_per_s);
    } else if (m.workload == "exp" && m.flop_per_s > 0) {
      c.exp_per_s = std::max(c.exp_per_s.value_or(0.0), m.flop_per_s);
    } else if (m.workload == "bandwidth" && m.verified.value_or(false) && m.bytes && m.time_s.median > 0) {
      // The fastest tenth of the repetitions: other processes only slow a
      // stream down, and a ceiling is what the machine can do, not its median.
      const double t = m.time_s.p10 > 0 ? m.time_s.p10 : m.time_s.median;
      c.memory.push_back({m.op, *m.bytes / t});
    }
  }
  if (c.peak_flop_per_s.empty() && !c.dram()) return std::nullopt;
  return c;
}

namespace {

json fit_json(const EnergyFit& f) {
  return {{"j_per_flop", f.j_per_flop},       {"j_per_byte", f.j_per_byte},
          {"constant_w", f.constant_w},       {"se_j_per_flop", f.se_j_per_flop},
          {"se_j_per_byte", f.se_j_per_byte}, {"se_constant_w", f.se_constant_w},
          {"rms_relative_error", f.rms_relative_error}, {"points", f.points}};
}

EnergyFit fit_from_json(const json& j) {
  EnergyFit f;
  f.j_per_flop = j.value("j_per_flop", 0.0);
  f.j_per_byte = j.value("j_per_byte", 0.0);
  f.constant_w = j.value("constant_w", 0.0);
  f.se_j_per_flop = j.value("se_j_per_flop", 0.0);
  f.se_j_per_byte = j.value("se_j_per_byte", 0.0);
  f.se_constant_w = j.value("se_constant_w", 0.0);
  f.rms_relative_error = j.value("rms_relative_error", 0.0);
  f.points = j.value("points", 0);
  return f;
}

}  // namespace

json to_json(const Ceilings& c) {
  json mem = json::array();
  for (const auto& m : c.memory) mem.push_back({{"name", m.name}, {"bytes_per_s", m.bytes_per_s}});
  const auto d = c.dram();
  json j = {{"label", c.label},
            {"threads", c.threads},
            {"peak_flop_per_s", c.peak_flop_per_s},
            {"memory", mem},
            {"capacity_bytes", c.capacity_bytes},
            {"dram", d ? json{{"name", d->name}, {"bytes_per_s", d->bytes_per_s}} : json(nullptr)}};
  if (c.modelled_energy) j["modelled_energy"] = fit_json(*c.modelled_energy);
  j["exp_per_s"] = c.exp_per_s ? json(*c.exp_per_s) : json(nullptr);
  j["core_round_trip_ns"] = c.core_round_trip_ns;
  if (c.measured_at > 0) j["measured_at"] = c.measured_at;
  return j;
}

Ceilings ceilings_from_json(const json& j) {
  Ceilings c;
  c.label = j.value("label", "");
  c.threads = j.value("threads", 0);
  if (j.contains("peak_flop_per_s") && j["peak_flop_per_s"].is_object())
    for (const auto& [k, v] : j["peak_flop_per_s"].items())
      if (v.is_number()) c.peak_flop_per_s[k] = v.get<double>();
  for (const auto& m : j.value("memory", json::array()))
    c.memory.push_back({m.value("name", ""), m.value("bytes_per_s", 0.0)});
  if (j.contains("capacity_bytes") && j["capacity_bytes"].is_object())
    for (const auto& [k, v] : j["capacity_bytes"].items())
      if (v.is_number() && v.get<double>() > 0) c.capacity_bytes[k] = v.get<double>();
  if (j.contains("modelled_energy") && j["modelled_energy"].is_object())
    c.modelled_energy = fit_from_json(j["modelled_energy"]);
  if (const auto it = j.find("exp_per_s"); it != j.end() && it->is_number() && it->get<double>() > 0)
    c.exp_per_s = it->get<double>();
  if (const auto it = j.find("core_round_trip_ns"); it != j.end() && it->is_array())
    for (const auto& v : *it)
      if (v.is_number() && v.get<double>() > 0) c.core_round_trip_ns.push_back(v.get<double>());
  if (const auto it = j.find("measured_at"); it != j.end() && it->is_number_integer() && it->get<std::int64_t>() > 0)
    c.measured_at = std::time_t(it->get<std::int64_t>());
  return c;
}

bool same_placement(const std::vector<double>& a_ns, const std::vector<double>& b_ns) {
  if (a_ns.empty() || b_ns.empty()) return true;
  for (double a : a_ns)
    for (double b : b_ns)
      if (a <= kPlacementRatio * b && b <= kPlacementRatio * a) return true;
  return false;
}

bool one_placement(const std::vector<double>& probes_ns) {
  if (probes_ns.empty()) return true;
  const auto [lo, hi] = std::minmax_element(probes_ns.begin(), probes_ns.end());
  return *hi <= kPlacementRatio * *lo;
}

Ceilings best_of_placements(const std::vector<Ceilings>& sets) {
  if (sets.empty()) return {};
  Ceilings best = sets.front();
  for (std::size_t i = 1; i < sets.size(); ++i) {
    const Ceilings& c = sets[i];
    for (const auto& [dtype, peak] : c.peak_flop_per_s) best.peak_flop_per_s[dtype] = std::max(best.peak_flop_per_s[dtype], peak);
    for (const auto& m : c.memory) {
      auto it = std::find_if(best.memory.begin(), best.memory.end(), [&](const MemoryCeiling& b) { return b.name == m.name; });
      if (it == best.memory.end()) best.memory.push_back(m);
      else it->bytes_per_s = std::max(it->bytes_per_s, m.bytes_per_s);
    }
    if (c.exp_per_s) best.exp_per_s = std::max(best.exp_per_s.value_or(0.0), *c.exp_per_s);
    best.core_round_trip_ns.insert(best.core_round_trip_ns.end(), c.core_round_trip_ns.begin(),
                                   c.core_round_trip_ns.end());
    if (c.measured_at > 0 && (best.measured_at == 0 || c.measured_at < best.measured_at)) best.measured_at = c.measured_at;
  }
  return best;
}

std::optional<std::string> placement_note(const Ceilings& c, const std::vector<double>& run_trips_ns) {
  if (c.core_round_trip_ns.empty() || run_trips_ns.empty()) return std::nullopt;
  std::vector<double> other;
  for (double t : run_trips_ns)
    if (!same_placement({t}, c.core_round_trip_ns)) other.push_back(t);
  if (other.empty()) return std::nullopt;
  const auto [lo, hi] = std::minmax_element(other.begin(), other.end());
  const auto [clo, chi] = std::minmax_element(c.core_round_trip_ns.begin(), c.core_round_trip_ns.end());
  return fmt::format(
      "note: {} of {} steps ran with the cores {:.0f}-{:.0f} ns apart, and the ceilings were measured with them "
      "{:.0f}-{:.0f} ns apart: on a virtual machine that is another placement of the vCPUs, with another DRAM "
      "bandwidth and another cost for what one core reads of what the other wrote, so memory-bound roofs may be off "
      "either way (docs/performance.md, \"What a roof does not see\"); `flopwatt run peak` measures in the placement of its time",
      other.size(), run_trips_ns.size(), *lo, *hi, *clo, *chi);
}

std::optional<double> measured_dram_bytes(const Measurement& m) {
  if (m.simulated || m.reps <= 0) return std::nullopt;
  const auto rd = m.counters.find(cpu::kDramReadBytes), wr = m.counters.find(cpu::kDramWriteBytes);
  if (rd == m.counters.end() || wr == m.counters.end() || !rd->second || !wr->second) return std::nullopt;
  const double total = (*rd->second + *wr->second) / m.reps;
  if (!(total > 0) || !std::isfinite(total)) return std::nullopt;
  return total;
}

void place_measurement(Measurement& m, const RooflineSet& roofs) {
  if (m.skipped || m.workload == "peak" || m.workload == "bandwidth" || m.workload == "exp" || !m.bytes) return;
  if (m.workload == "gpt2" && m.op == "step") return;
  const Ceilings* c = nullptr;
  if (m.simulated) {
    auto it = roofs.modelled.find(m.backend);
    if (it != roofs.modelled.end()) c = &it->second;
  } else if (roofs.host) {
    c = &*roofs.host;
  }
  // Counted DRAM bytes replace the analytic ones: caches that hold an operand,
  // or re-reads the analytic count ignores, are what a roofline is meant to show.
  double bytes = *m.bytes;
  double working_set = m.working_set_bytes.value_or(bytes);
  m.intensity_basis = "analytic";
  if (const auto measured = measured_dram_bytes(m)) {
    m.dram_bytes_measured = *measured;
    bytes = *measured;
    working_set = 0;  // counted at the memory controllers: DRAM's ceiling
    m.intensity_basis = "measured";
  }
  if (bytes > 0 && m.flop > 0) m.intensity = m.flop / bytes;
  if (!c) return;
  const std::string peak_dtype = m.roof_peak_dtype.value_or(m.dtype);
  const auto peak = c->peak(peak_dtype);
  const auto mem = c->memory_for(m.memory_pattern.value_or(""), working_set);
  if (!peak || !mem || !(mem->bytes_per_s > 0) || !(bytes > 0)) return;
  const double time = m.flop > 0 ? m.flop / m.flop_per_s : m.time_s.median;
  m.roof_ceiling = mem->name;
  m.roof_peak_dtype = peak_dtype;
  m.roof_time_s = std::max(m.flop / *peak, bytes / mem->bytes_per_s);
  // The exps run on the same vector pipes as the rest of the FLOPs, so adding
  // the two times would be a tighter floor; the larger of them is the one
  // that is surely a floor.
  const double exp_time = m.exps && c->exp_per_s ? *m.exps / *c->exp_per_s : 0.0;
  if (exp_time > *m.roof_time_s && m.flop > 0) {
    m.roof_time_s = exp_time;
    m.roof_flop_per_s = m.flop / exp_time;
    m.roof_bound = "exp";
    if (m.flop_per_s > 0 && std::isfinite(m.flop_per_s)) m.fraction_of_roof = m.flop_per_s / *m.roof_flop_per_s;
  } else if (const auto p = place_on_roof(m.flop, bytes, m.flop_per_s, *peak, mem->bytes_per_s)) {
    m.roof_flop_per_s = p->attainable_flop_per_s;
    m.fraction_of_roof = p->fraction;
    m.roof_bound = p->bound;
  } else if (m.flop == 0 && time > 0 && std::isfinite(time)) {
    m.fraction_of_roof = *m.roof_time_s / time;
    m.roof_bound = "memory";
  }
}

std::optional<double> step_roofline_limit(const std::vector<Measurement>& ops) {
  double sum = 0;
  for (const auto& m : ops) {
    if (m.skipped) continue;
    if (!m.roof_time_s) return std::nullopt;
    sum += *m.roof_time_s;
  }
  return sum > 0 ? std::optional<double>(sum) : std::nullopt;
}

std::optional<EnergyFit> fit_energy(const std::vector<EnergySample>& samples) {
  // Weighted least squares: each row (flop, bytes, seconds) . x = joules is
  // divided by joules, so the residuals are relative errors. Normal equations
  // in long double; the columns are scaled to unit norm first, since FLOPs
  // (1e9..1e12) and seconds (1e-3..1) differ by 15 orders of magnitude.
  std::vector<std::array<long double, 3>> rows;
  for (const auto& s : samples) {
    if (!(s.joules > 0) || !std::isfinite(s.joules) || !std::isfinite(s.flop) || !std::isfinite(s.bytes) ||
        !std::isfinite(s.seconds))
      continue;
    rows.push_back({s.flop / s.joules, s.bytes / s.joules, s.seconds / s.joules});
  }
  const int n = int(rows.size());
  if (n < 4) return std::nullopt;
  std::array<long double, 3> scale{};
  for (const auto& r : rows)
    for (int k = 0; k < 3; ++k) scale[k] += r[k] * r[k];
  for (auto& s : scale) {
    if (!(s > 0)) return std::nullopt;
    s = std::sqrt(s);
  }
  long double a[3][3] = {}, b[3] = {};
  for (auto r : rows) {
    for (int k = 0; k < 3; ++k) r[k] /= scale[k];
    for (int i = 0; i < 3; ++i) {
      b[i] += r[i];  // the weighted target is 1 on every row
      for (int k = 0; k < 3; ++k) a[i][k] += r[i] * r[k];
    }
  }
  // Inverse of the 3x3 normal matrix by cofactors (also gives the standard errors).
  const long double det = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
                          a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
                          a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
  if (!(std::fabs(det) > 1e-12L)) return std::nullopt;
  long double inv[3][3];
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k) {
      const int r0 = (k + 1) % 3, r1 = (k + 2) % 3, c0 = (i + 1) % 3, c1 = (i + 2) % 3;
      inv[i][k] = (a[r0][c0] * a[r1][c1] - a[r0][c1] * a[r1][c0]) / det;
    }
  long double x[3] = {};
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k) x[i] += inv[i][k] * b[k];
  long double rss = 0;
  for (auto r : rows) {
    long double pred = 0;
    for (int k = 0; k < 3; ++k) pred += r[k] / scale[k] * x[k];
    rss += (pred - 1) * (pred - 1);
  }
  EnergyFit f;
  f.points = n;
  f.j_per_flop = double(x[0] / scale[0]);
  f.j_per_byte = double(x[1] / scale[1]);
  f.constant_w = double(x[2] / scale[2]);
  f.rms_relative_error = double(std::sqrt(rss / n));
  const long double sigma2 = n > 3 ? rss / (n - 3) : 0;
  f.se_j_per_flop = double(std::sqrt(sigma2 * inv[0][0]) / scale[0]);
  f.se_j_per_byte = double(std::sqrt(sigma2 * inv[1][1]) / scale[1]);
  f.se_constant_w = double(std::sqrt(sigma2 * inv[2][2]) / scale[2]);
  return f;
}

double energy_roof_flop_per_j(const EnergyFit& f, double intensity, double attainable) {
  double per_flop = f.j_per_flop;
  if (intensity > 0) per_flop += f.j_per_byte / intensity;
  if (attainable > 0) per_flop += f.constant_w / attainable;
  return per_flop > 0 ? 1.0 / per_flop : 0.0;
}

json energy_roofline_json(const Run& run, const std::optional<std::string>& source, const RooflineSet& roofs) {
  json out = json::object();
  if (source) {
    // The GPT-2 step rows repeat the ops' energy; GEMM rows and per-op rows are independent windows.
    std::vector<EnergySample> samples;
    std::size_t measured = 0;
    for (const auto& m : run.measurements) {
      if (m.skipped || m.simulated || !m.bytes || m.op == "step" || m.layer) continue;
      // Only rows whose own judged headline is this source: a figure the row's judgement refused or
      // passed over is no point of the fit.
      if (headline_of(run, m).source != source) continue;
      auto it = m.energy.find(*source);
      if (it == m.energy.end() || it->second.confidence != "ok") continue;
      samples.push_back({m.flop * m.reps, m.dram_bytes_measured.value_or(*m.bytes) * m.reps, m.time_s.total,
                         it->second.j});
      measured += m.dram_bytes_measured.has_value();
    }
    json fit = nullptr;
    if (const auto f = fit_energy(samples)) {
      fit = fit_json(*f);
      fit["source"] = *source;
      fit["method"] = fmt::format(
          "least squares of J = j_per_flop x FLOP + j_per_byte x DRAM bytes + constant_w x seconds over the "
          "run's measurements with energy from the source, each weighted by 1/J (relative errors); se_* are "
          "the coefficients' standard errors; bytes counted by the memory controllers for {} of {} points, "
          "analytic for the rest",
          measured, samples.size());
    }
    out["host"] = fit;
    out["host_points"] = samples.size();
  }
  for (const auto& [backend, c] : roofs.modelled)
    if (c.modelled_energy) {
      json m = fit_json(*c.modelled_energy);
      m["label"] = c.label;
      m["method"] = "stated by the device model (modelled, not measured)";
      out["modelled"][backend] = m;
    }
  return out.empty() ? json(nullptr) : out;
}

std::optional<double> energy_ceiling_of(const Run& run, const Measurement& m) {
  const json& er = run.energy_roofline;
  if (!m.intensity || !(*m.intensity > 0) || !er.is_object()) return std::nullopt;
  const json* fit = nullptr;
  if (m.simulated) {
    if (er.contains("modelled") && er["modelled"].is_object() && er["modelled"].contains(m.backend))
      fit = &er["modelled"][m.backend];
  } else if (er.contains("host") && er["host"].is_object() && er["host"].contains("source") &&
             headline_of(run, m).source == er["host"]["source"].get<std::string>()) {
    fit = &er["host"];
  }
  if (!fit) return std::nullopt;
  const double v = energy_roof_flop_per_j(fit_from_json(*fit), *m.intensity, m.roof_flop_per_s.value_or(0));
  return v > 0 ? std::optional(v) : std::nullopt;
}

}  // namespace flopwatt
