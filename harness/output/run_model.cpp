#include "harness/output/run_model.h"

#include <fmt/core.h>

#include "harness/output/headline_view.h"
#include "harness/output/metrics.h"
#include "harness/output/text.h"

namespace flopwatt {

using nlohmann::json;

namespace {

// The TimeStats fields by metric, so run.json and measurements.csv name them alike.
struct TimeField {
  const Metric* metric;
  double TimeStats::*field;
};
constexpr TimeField kTimeFields[] = {
    {&metric::kTimeMedian, &TimeStats::median}, {&metric::kTimeP10, &TimeStats::p10},
    {&metric::kTimeP90, &TimeStats::p90},       {&metric::kTimeTotal, &TimeStats::total},
    {&metric::kTimeMean, &TimeStats::mean},     {&metric::kTimeMin, &TimeStats::min},
    {&metric::kTimeMax, &TimeStats::max},       {&metric::kTimeCi95Lo, &TimeStats::ci95_lo},
    {&metric::kTimeCi95Hi, &TimeStats::ci95_hi}};

struct BreakdownField {
  const Metric* metric;
  double Breakdown::*field;
};
constexpr BreakdownField kBreakdownFields[] = {
    {&metric::kCopyIn, &Breakdown::copy_in}, {&metric::kCompute, &Breakdown::compute},
    {&metric::kCopyOut, &Breakdown::copy_out}, {&metric::kSubmit, &Breakdown::submit},
    {&metric::kReconfigure, &Breakdown::reconfigure}};

double number_at(const json& j, std::string_view path) {
  const json* v = json_get(j, path);
  return v && v->is_number() ? v->get<double>() : 0.0;
}

// Schema version 1 spelled the time statistics {"time_s": {"median", ..., "ci95": [lo, hi]}}
// and the breakdown {"breakdown_s": {"copy_in", ...}}.
void read_v1_time_and_breakdown(const json& j, Measurement& m) {
  const auto& t = j.at("time_s");
  m.time_s.median = t.value("median", 0.0);
  m.time_s.p10 = t.value("p10", 0.0);
  m.time_s.p90 = t.value("p90", 0.0);
  m.time_s.total = t.value("total", 0.0);
  m.time_s.mean = t.value("mean", 0.0);
  m.time_s.min = t.value("min", 0.0);
  m.time_s.max = t.value("max", 0.0);
  if (t.contains("ci95") && t["ci95"].is_array() && t["ci95"].size() == 2) {
    m.time_s.ci95_lo = t["ci95"][0].get<double>();
    m.time_s.ci95_hi = t["ci95"][1].get<double>();
  }
  if (j.contains("breakdown_s") && !j["breakdown_s"].is_null()) {
    const auto& b = j["breakdown_s"];
    m.breakdown_s = Breakdown{b.value("copy_in", 0.0), b.value("compute", 0.0), b.value("copy_out", 0.0),
                              b.value("submit", 0.0), b.value("reconfigure", 0.0)};
  }
}

}  // namespace

json figures_basis() {
  return {{"flop_per_j", "window: FLOP per repetition x reps / the energy of the window the timed repetitions tile"},
          {std::string(metric::kFlopPerSWindow.name),
           "window: FLOP per repetition x reps / the total time of the same repetitions (FLOP/J x avg_power_w)"},
          {"flop_per_s", "median: FLOP per repetition / the median repetition time (robust to a stalled repetition)"},
          {std::string(metric::kStalled.name),
           "true when the slowest repetition took more than " + shortest(kStallRatio) +
               " x the median: the window figures (FLOP/J, flop_per_s_window) then include the stall and "
               "flop_per_s does not"}};
}

json to_json(const Measurement& m) {
  json j = {
      {"workload", m.workload},
      {"op", m.op},
      {"pass", json_or_null(m.pass)},
      {"layer", json_or_null(m.layer)},
      {"step", json_or_null(m.step)},
      {"backend", m.backend},
      {"dtype", m.dtype},
      {"shape", m.shape ? json{{"M", m.shape->M}, {"N", m.shape->N}, {"K", m.shape->K}} : json(nullptr)},
      {"layout", json_or_null(m.layout)},
      {"count_per_step", json_or_null(m.count_per_step)},
      {"threads", json_or_null(m.threads)},
      {"simulated", m.simulated},
      {"reps", m.reps},
      {"rep_times_s", m.rep_times_s},
      {"flop", m.flop},
      {"bytes", json_or_null(m.bytes)},
      {"exps", json_or_null(m.exps)},
      {"flop_per_s", m.flop_per_s},
      {std::string(metric::kFlopPerSWindow.name), json_or_null(m.flop_per_s_window)},
      {std::string(metric::kRepMaxOverMedian.name), json_or_null(m.rep_max_over_median)},
      {std::string(metric::kStalled.name), json_or_null(m.stalled)},
      {"fraction_of_peak", json_or_null(m.fraction_of_peak)},
      {std::string(metric::kIntensity.name), json_or_null(m.intensity)},
      {std::string(metric::kRoof.name), json_or_null(m.roof_flop_per_s)},
      {std::string(metric::kFractionOfRoof.name), json_or_null(m.fraction_of_roof)},
      {std::string(metric::kRoofBound.name), json_or_null(m.roof_bound)},
      {std::string(metric::kMemoryPattern.name), json_or_null(m.memory_pattern)},
      {"roof_peak_dtype", json_or_null(m.roof_peak_dtype)},
      {std::string(metric::kWorkingSet.name), json_or_null(m.working_set_bytes)},
      {std::string(metric::kRoofCeiling.name), json_or_null(m.roof_ceiling)},
      {std::string(metric::kRoofTime.name), json_or_null(m.roof_time_s)},
      {std::string(metric::kDramBytesMeasured.name), json_or_null(m.dram_bytes_measured)},
      {std::string(metric::kIntensityBasis.name), json_or_null(m.intensity_basis)},
      {"verified", json_or_null(m.verified)},
      {"verify_rel_err", json_or_null(m.verify_rel_err)},
      {"loss", json_or_null(m.loss)},
      {"skipped", json_or_null(m.skipped)},
      {"window_ns", json_or_null(m.window_ns)},
      {"supply_changed", json_or_null(m.supply_changed)},
      {"core_round_trip_ns", json_or_null(m.core_round_trip_ns)},
      {"headline_source", json_or_null(m.headline_source)},
      {"headline_why", json_or_null(m.headline_why)},
  };
  for (const auto& f : kTimeFields) json_set(j, f.metric->name, m.time_s.*f.field);
  j["breakdown"] = nullptr;
  if (m.breakdown_s)
    for (const auto& f : kBreakdownFields) json_set(j, f.metric->name, (*m.breakdown_s).*f.field);
  json e = json::object();
  for (const auto& [id, f] : m.energy) {
    e[id] = {{"j", f.j},
             {"avg_power_w", f.avg_power_w},
             {"net_j", json_or_null(f.net_j)},
             {"flop_per_j", json_or_null(f.flop_per_j)},
             {"flop_per_j_net", json_or_null(f.flop_per_j_net)},
             {"confidence", f.confidence}};
    if (!f.why_low.empty()) e[id]["why_low"] = f.why_low;
  }
  j["energy"] = e;
  if (!m.counters.empty()) {
    json c = json::object();
    for (const auto& [event, v] : m.counters) c[event] = json_or_null(v);
    j["counters"] = c;
  }
  return j;
}

json to_json(const Run& r) {
  json sources = json::array();
  for (const auto& s : r.power_sources)
    sources.push_back({{"id", s.id},
                       {"domain", s.domain},
                       {"kind", s.kind},
                       {"available", s.available},
                       {"reason", json_or_null(s.reason)},
                       {"fix", json_or_null(s.fix)},
                       {"update_interval_s", json_or_null(s.update_interval_s)},
                       {"simulated", s.simulated},
                       {"contains", s.contains},
                       {"note", json_or_null(s.note)}});
  json idle = json::object();
  for (const auto& [id, f] : r.idle)
    idle[id] = {{"power_w", f.power_w}, {"duration_s", f.duration_s}, {"sd_w", json_or_null(f.sd_w)},
                {"windows", f.windows}, {"samples", json_or_null(f.samples)}, {"supply", json_or_null(f.supply)}};
  json ms = json::array();
  for (const auto& m : r.measurements) ms.push_back(to_json(m));
  const RunHeadline headline = run_headline(r);
  json headline_rows = json::array();
  for (const auto& [id, n] : headline.sources) headline_rows.push_back({{"source", id}, {"rows", n}});
  return {{"schema_version", r.schema_version},
          {"flopwatt_version", r.flopwatt_version},
          {"run_id", r.run_id},
          {"complete", r.complete},
          {"context", r.context},
          {"power_sources", sources},
          {"headline_source", headline.json_value().empty() ? json(nullptr) : json(headline.json_value())},
          {"headline_sources", headline_rows},
          {"headline_rows_without", headline.rows_without},
          {"figures_basis", figures_basis()},
          {"idle", idle},
          {"energy_roofline", r.energy_roofline},
          {"measurements", ms}};
}

Measurement measurement_from_json(const json& j) {
  Measurement m;
  m.workload = j.at("workload").get<std::string>();
  m.op = j.at("op").get<std::string>();
  m.pass = json_optional<std::string>(j, "pass");
  m.layer = json_optional<int>(j, "layer");
  m.step = json_optional<int>(j, "step");
  m.backend = j.at("backend").get<std::string>();
  m.dtype = j.at("dtype").get<std::string>();
  if (j.contains("shape") && !j["shape"].is_null())
    m.shape = Shape{j["shape"].at("M").get<std::int64_t>(), j["shape"].at("N").get<std::int64_t>(),
                    j["shape"].at("K").get<std::int64_t>()};
  m.layout = json_optional<std::string>(j, "layout");
  m.count_per_step = json_optional<int>(j, "count_per_step");
  m.threads = json_optional<int>(j, "threads");
  m.simulated = j.value("simulated", false);
  m.reps = j.value("reps", 0);
  if (j.contains("time_s")) {
    read_v1_time_and_breakdown(j, m);
  } else {
    (void)j.at("time");  // required: a missing key is a malformed run.json
    for (const auto& f : kTimeFields) m.time_s.*f.field = number_at(j, f.metric->name);
    if (j.contains("breakdown") && j["breakdown"].is_object()) {
      Breakdown b{};
      for (const auto& f : kBreakdownFields) b.*f.field = number_at(j, f.metric->name);
      m.breakdown_s = b;
    }
  }
  if (j.contains("rep_times_s")) m.rep_times_s = j["rep_times_s"].get<std::vector<double>>();
  m.flop = j.value("flop", 0.0);
  m.bytes = json_optional<double>(j, "bytes");
  m.flop_per_s = j.value("flop_per_s", 0.0);
  m.flop_per_s_window = json_optional<double>(j, metric::kFlopPerSWindow.name.data());
  m.rep_max_over_median = json_optional<double>(j, metric::kRepMaxOverMedian.name.data());
  m.stalled = json_optional<bool>(j, metric::kStalled.name.data());
  m.fraction_of_peak = json_optional<double>(j, "fraction_of_peak");
  m.intensity = json_optional<double>(j, std::string(metric::kIntensity.name).c_str());
  m.roof_flop_per_s = json_optional<double>(j, std::string(metric::kRoof.name).c_str());
  m.fraction_of_roof = json_optional<double>(j, std::string(metric::kFractionOfRoof.name).c_str());
  m.roof_bound = json_optional<std::string>(j, std::string(metric::kRoofBound.name).c_str());
  m.memory_pattern = json_optional<std::string>(j, metric::kMemoryPattern.name.data());
  m.roof_peak_dtype = json_optional<std::string>(j, "roof_peak_dtype");
  m.exps = json_optional<double>(j, "exps");
  m.working_set_bytes = json_optional<double>(j, metric::kWorkingSet.name.data());
  m.roof_ceiling = json_optional<std::string>(j, metric::kRoofCeiling.name.data());
  m.roof_time_s = json_optional<double>(j, metric::kRoofTime.name.data());
  m.dram_bytes_measured = json_optional<double>(j, metric::kDramBytesMeasured.name.data());
  m.intensity_basis = json_optional<std::string>(j, metric::kIntensityBasis.name.data());
  if (j.contains("counters") && j["counters"].is_object())
    for (const auto& [event, v] : j["counters"].items())
      m.counters[event] = v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
  m.verified = json_optional<bool>(j, "verified");
  m.verify_rel_err = json_optional<double>(j, "verify_rel_err");
  m.loss = json_optional<double>(j, "loss");
  m.skipped = json_optional<std::string>(j, "skipped");
  m.window_ns = json_optional<std::array<std::int64_t, 2>>(j, "window_ns");
  m.supply_changed = json_optional<bool>(j, "supply_changed");
  m.core_round_trip_ns = json_optional<double>(j, "core_round_trip_ns");
  m.headline_source = json_optional<std::string>(j, "headline_source");
  m.headline_why = json_optional<std::string>(j, "headline_why");
  if (j.contains("energy"))
    for (const auto& [id, e] : j["energy"].items()) {
      EnergyFigures f;
      f.j = e.value("j", 0.0);
      f.avg_power_w = e.value("avg_power_w", 0.0);
      f.net_j = json_optional<double>(e, "net_j");
      f.flop_per_j = json_optional<double>(e, "flop_per_j");
      f.flop_per_j_net = json_optional<double>(e, "flop_per_j_net");
      f.confidence = e.value("confidence", "ok");
      f.why_low = e.value("why_low", "");
      m.energy[id] = f;
    }
  return m;
}

Run run_from_json(const json& j) {
  Run r;
  r.schema_version = j.at("schema_version").get<int>();
  r.flopwatt_version = j.value("flopwatt_version", "");
  r.run_id = j.value("run_id", "");
  r.complete = j.value("complete", false);
  r.context = j.value("context", json::object());
  r.energy_roofline = j.value("energy_roofline", json(nullptr));
  for (const auto& s : j.value("power_sources", json::array())) {
    PowerSourceInfo p;
    p.id = s.at("id").get<std::string>();
    p.domain = s.value("domain", "");
    p.kind = s.value("kind", "");
    p.available = s.value("available", false);
    p.reason = json_optional<std::string>(s, "reason");
    p.fix = json_optional<std::string>(s, "fix");
    p.update_interval_s = json_optional<double>(s, "update_interval_s");
    p.simulated = s.value("simulated", false);
    if (s.contains("contains")) p.contains = s["contains"].get<std::vector<std::string>>();
    p.note = json_optional<std::string>(s, "note");
    r.power_sources.push_back(p);
  }
  const json idle = j.value("idle", json::object());  // items() must not outlive its json
  for (const auto& [id, f] : idle.items())
    r.idle[id] = IdleFigure{f.value("power_w", 0.0), f.value("duration_s", 0.0), json_optional<double>(f, "sd_w"),
                            f.value("windows", 0), json_optional<int>(f, "samples"),
                            json_optional<std::string>(f, "supply")};
  for (const auto& m : j.value("measurements", json::array())) r.measurements.push_back(measurement_from_json(m));
  return r;
}

namespace {

std::string shape_text(const Measurement& m) {
  return m.shape ? fmt::format("{}x{}x{}", m.shape->M, m.shape->N, m.shape->K) : "";
}

}  // namespace

std::string config_key(const Measurement& m) {
  // The FLOP count pins what the name alone does not (model size, batch, sequence).
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{:.9g}", m.workload, m.op, m.pass.value_or(""),
                     m.layer ? std::to_string(*m.layer) : "", m.dtype, shape_text(m), m.layout.value_or(""),
                     m.threads ? std::to_string(*m.threads) : "", m.flop);
}

std::string config_label(const Measurement& m) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on `s += " " + x`.
  std::string s = m.op;
  auto add = [&s](const std::string& part) {
    s += ' ';
    s += part;
  };
  if (m.pass) add(*m.pass);
  if (m.layer) add(fmt::format("L{}", *m.layer));
  // A custom shape's op is already its shape ("128x256x64_NT").
  const bool named_by_shape = m.shape && m.op.rfind(shape_text(m), 0) == 0;
  if (m.shape && !named_by_shape) add(shape_text(m));
  if (m.layout && m.workload == "gemm" && *m.layout != "NN" && !named_by_shape) add(*m.layout);
  if (m.dtype != "fp32") add(m.dtype);
  return s;
}

std::string above_roof_warning(const std::string& row) {
  return fmt::format("warning: above {:.0f}% of its roof: {} (ceilings measured while the machine was busy: re-run "
                     "`flopwatt run peak` on a quiet machine; else a missing ceiling or a byte model counting bytes "
                     "the op never moves)",
                     100 * kRoofTolerance, row);
}

std::vector<std::string> rows_above_roof(const std::vector<Measurement>& ms) {
  std::vector<std::string> out;
  for (const auto& m : ms)
    if (m.fraction_of_roof && *m.fraction_of_roof > kRoofTolerance)
      out.push_back(fmt::format("{}{}{} ({}{}): {:.0f}% of {}", m.op, m.pass ? " " : "", m.pass.value_or(""),
                                m.backend, m.shape ? fmt::format(" {}x{}x{}", m.shape->M, m.shape->N, m.shape->K) : "",
                                100 * *m.fraction_of_roof, m.roof_ceiling.value_or("its roof")));
  return out;
}

}  // namespace flopwatt
