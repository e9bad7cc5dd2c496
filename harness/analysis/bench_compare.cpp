#include "harness/analysis/bench_compare.h"

#include <fmt/core.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "harness/output/bench_label.h"
#include "harness/output/text.h"
#include "harness/run/statistics.h"
#include "workloads/error.h"

namespace flopwatt {

using nlohmann::json;

namespace {

constexpr const char* kBenchFix = "pass the file flopwatt_bench --benchmark_format=json (or --benchmark_out) wrote";

// The time units Google Benchmark's JSON reporter writes (compare.py converts the same ones).
double unit_seconds(const std::string& u) {
  if (u == "ns") return 1e-9;
  if (u == "us") return 1e-6;
  if (u == "ms") return 1e-3;
  if (u == "s") return 1.0;
  return 0;
}

// flopwatt_bench's counters (bench/energy.h), with or without a
// "<source id>:" prefix (--power-counters all).
struct CounterKind {
  const char* suffix;
  const char* unit;
  bool higher_is_better;
  bool energy;
};
constexpr CounterKind kCounters[] = {{"FLOP/s", "FLOP/s", true, false},
                                     {"W", "W", false, true},
                                     {"J/iter", "J", false, true},
                                     {"FLOP/J", "FLOP/J", true, true}};

const CounterKind* counter_kind(const std::string& key) {
  for (const auto& c : kCounters) {
    const std::string s = c.suffix;
    if (key == s) return &c;
    if (key.size() > s.size() + 1 && key.ends_with(":" + s)) return &c;
  }
  return nullptr;
}

bool is_iteration(const json& b) {
  // Aggregates (mean, median, stddev, cv) are derived from the repetitions
  // and carry their own names; only the repetitions are samples.
  return b.is_object() && b.value("run_type", std::string("iteration")) == "iteration" &&
         !b.value("error_occurred", false) && b.contains("name") && b["name"].is_string();
}

double change_of(double a, double b) {
  // compare.py's calculate_change.
  if (a == 0 && b == 0) return 0;
  if (a == 0) return (b - a) / ((a + b) / 2);
  return (b - a) / std::fabs(a);
}

std::string context_string(const json& doc, const char* key) {
  if (doc.contains("context") && doc["context"].is_object() && doc["context"].contains(key) &&
      doc["context"][key].is_string())
    return doc["context"][key].get<std::string>();
  return "";
}

}  // namespace

bool is_bench_json(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::ifstream f(path);
  const json j = json::parse(f, nullptr, false);
  return !j.is_discarded() && j.is_object() && j.contains("benchmarks") && j["benchmarks"].is_array();
}

BenchFile load_bench_json(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError(path, std::string("cannot read: ") + std::strerror(errno), kBenchFix);
  if (!S_ISREG(st.st_mode)) throw InputError(path, "not a regular file", kBenchFix);
  std::ifstream f(path);
  if (!f) throw InputError(path, "cannot read", kBenchFix);
  BenchFile b{path, {}};
  try {
    b.doc = json::parse(f);
  } catch (const json::parse_error& e) {
    throw InputError(path, fmt::format("not valid JSON at byte {}", e.byte), kBenchFix);
  }
  if (!b.doc.is_object() || !b.doc.contains("benchmarks") || !b.doc["benchmarks"].is_array())
    throw InputError(path, "not Google Benchmark JSON: no benchmarks array", kBenchFix);
  return b;
}

namespace {

using Reps = std::vector<const json*>;

// Repetitions by name, in first-seen order.
std::map<std::string, Reps> group_by_name(const json& doc, std::vector<std::string>& order) {
  std::map<std::string, Reps> g;
  for (const auto& b : doc["benchmarks"]) {
    if (!is_iteration(b)) continue;
    const std::string name = b["name"].get<std::string>();
    if (!g.count(name)) order.push_back(name);
    g[name].push_back(&b);
  }
  return g;
}

// Each loop's label names its own energy source (harness/output/bench_label.h): energy
// compares only where every repetition of both sides names one and the same source.
bool one_energy_source(BenchRow& row, const Reps& ra, const Reps& rb, std::vector<std::string>& notes) {
  std::set<std::string> sources_a, sources_b;
  for (const auto* side : {&ra, &rb})
    for (const json* r : *side) {
      const std::string label = r->value("label", std::string());
      if (label.find(kLabelLow) != std::string::npos) row.low_confidence_energy = true;
      if (const auto src = label_source(label)) (side == &ra ? sources_a : sources_b).insert(*src);
    }
  const bool one_source = sources_a == sources_b && sources_a.size() <= 1;
  if (!one_source) {
    row.energy_note = fmt::format("energy from different sources (A: {}, B: {}): no energy compared",
                                  sources_a.empty() ? "none" : join(std::vector<std::string>(sources_a.begin(), sources_a.end()), ", "),
                                  sources_b.empty() ? "none" : join(std::vector<std::string>(sources_b.begin(), sources_b.end()), ", "));
    notes.push_back(row.name + ": " + row.energy_note);
  }
  return one_source;
}

// The metrics a row compares: the times, then the counters of its first repetition (energy
// ones only from one source).
std::vector<MetricComparison> metrics_of(const json& first, bool one_source) {
  std::vector<MetricComparison> ms;
  for (const char* t : {"real_time", "cpu_time"}) {
    MetricComparison m;
    m.metric = t;
    m.unit = "s";
    ms.push_back(m);
  }
  for (const auto& [key, v] : first.items())
    if (const CounterKind* k = counter_kind(key); k && v.is_number() && (one_source || !k->energy)) {
      MetricComparison m;
      m.metric = key;
      m.unit = k->unit;
      m.higher_is_better = k->higher_is_better;
      m.energy = k->energy;
      ms.push_back(m);
    }
  return ms;
}

// False when a repetition lacks the metric: a metric is compared only where every one has it.
bool collect(const Reps& reps, const MetricComparison& m, std::vector<double>& out) {
  for (const json* r : reps) {
    if (!r->contains(m.metric) || !(*r)[m.metric].is_number()) return false;
    double v = (*r)[m.metric].get<double>();
    if (m.unit == "s") v *= unit_seconds(r->value("time_unit", std::string("ns")));
    if (!std::isfinite(v)) continue;  // a NaN would rank anywhere; it is not a sample
    out.push_back(v);
  }
  return true;
}

// False when the metric cannot be compared (missing somewhere, or no finite sample on a side).
bool compare_metric(MetricComparison& m, const Reps& ra, const Reps& rb, double alpha) {
  const bool complete_a = collect(ra, m, m.a);
  const bool complete_b = collect(rb, m, m.b);
  if (!complete_a || !complete_b || m.a.empty() || m.b.empty()) return false;
  m.median_a = quantile(m.a, 0.5);
  m.median_b = quantile(m.b, 0.5);
  m.change = change_of(m.median_a, m.median_b);
  if (m.a.size() >= kUTestMinReps && m.b.size() >= kUTestMinReps) {
    m.utest = mann_whitney_u(m.a, m.b);
    m.significant = m.utest->p < alpha;
  }
  return true;
}

// compare.py's warnings about too few repetitions for the U test.
std::string repetitions_warning(const BenchRow& row) {
  const std::size_t least = std::min(row.reps_a, row.reps_b);
  if (least < kUTestMinReps)
    return fmt::format("no U test: {} vs {} repetitions, it needs {} on each side "
                       "(--benchmark_repetitions={} or more)",
                       row.reps_a, row.reps_b, kUTestMinReps, kUTestOptimalReps);
  if (least < kUTestOptimalReps)
    return fmt::format("{} vs {} repetitions: p-values unreliable below {} (as compare.py warns)", row.reps_a,
                       row.reps_b, kUTestOptimalReps);
  return "";
}

BenchRow compare_row(const std::string& name, const Reps& ra, const Reps& rb, double alpha,
                     std::vector<std::string>& notes) {
  BenchRow row;
  row.name = name;
  row.reps_a = ra.size();
  row.reps_b = rb.size();
  const bool one_source = one_energy_source(row, ra, rb, notes);
  for (auto& m : metrics_of(*ra.front(), one_source))
    if (compare_metric(m, ra, rb, alpha)) row.metrics.push_back(std::move(m));
  row.warning = repetitions_warning(row);
  return row;
}

}  // namespace

BenchComparison compare_bench(const BenchFile& fa, const BenchFile& fb, double alpha) {
  BenchComparison c;
  c.file_a = fa.path;
  c.file_b = fb.path;
  c.alpha = alpha;
  c.headline_a = context_string(fa.doc, "flopwatt_power_headline");
  c.headline_b = context_string(fb.doc, "flopwatt_power_headline");
  if (c.headline_a != c.headline_b)
    c.notes.push_back(fmt::format("energy counters come from different sources (A: {}, B: {}): their W, J/iter and "
                                  "FLOP/J compare two meters, not only two runs",
                                  c.headline_a.empty() ? "none" : c.headline_a,
                                  c.headline_b.empty() ? "none" : c.headline_b));

  std::vector<std::string> order_a, order_b;
  const auto ga = group_by_name(fa.doc, order_a);
  const auto gb = group_by_name(fb.doc, order_b);
  for (const auto& n : order_b)
    if (!ga.count(n)) c.only_b.push_back(n);
  for (const auto& name : order_a) {
    const auto itb = gb.find(name);
    if (itb == gb.end()) c.only_a.push_back(name);
    else c.rows.push_back(compare_row(name, ga.at(name), itb->second, alpha, c.notes));
  }
  return c;
}

namespace {

std::string fmt_value(double v, const std::string& unit) {
  if (unit == "s") {
    if (v < 1e-6) return fmt::format("{:.4g} ns", v * 1e9);
    if (v < 1e-3) return fmt::format("{:.4g} us", v * 1e6);
    if (v < 1) return fmt::format("{:.4g} ms", v * 1e3);
    return fmt::format("{:.4g} s", v);
  }
  return fmt::format("{:.4g}", v);
}

std::string verdict(const MetricComparison& m, double alpha) {
  if (!m.utest) return "no test";
  if (!m.significant) return fmt::format("same (p >= {})", shortest(alpha));
  const bool better = (m.change > 0) == m.higher_is_better;
  return better ? "B better" : "B worse";
}

}  // namespace

std::string bench_comparison_markdown(const BenchComparison& c) {
  std::ostringstream os;
  os << "# flopwatt_bench comparison\n\n";
  os << "A (baseline): `" << c.file_a << "`, energy from " << (c.headline_a.empty() ? "none" : c.headline_a) << "  \n";
  os << "B: `" << c.file_b << "`, energy from " << (c.headline_b.empty() ? "none" : c.headline_b) << "\n\n";
  os << "Per benchmark, the median of each side's repetitions, change = (B - A) / |A|, and the two-sided "
        "Mann-Whitney U test on the repetitions (alpha "
     << shortest(c.alpha)
     << "; exact below 9 values without ties, else the normal approximation with tie correction). "
        "Times are per iteration; W, J/iter and FLOP/J come from flopwatt's power sampler.\n\n";
  for (const auto& n : c.notes) os << "**Note:** " << n << "\n\n";
  os << "| benchmark | metric | A | B | change | p | U test | verdict |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : c.rows) {
    for (const auto& m : r.metrics) {
      const std::string low = m.energy && r.low_confidence_energy ? " (low confidence)" : "";
      os << "| " << r.name << " | " << m.metric << low << " | " << fmt_value(m.median_a, m.unit) << " | "
         << fmt_value(m.median_b, m.unit) << " | " << fmt::format("{:+.1f}%", 100 * m.change) << " | "
         << (m.utest ? fmt::format("{:.4f}", m.utest->p) : "-") << " | "
         << (m.utest ? fmt::format("{} vs {}, {}", m.a.size(), m.b.size(), m.utest->method) : "-") << " | "
         << verdict(m, c.alpha) << " |\n";
    }
  }
  for (const auto& r : c.rows)
    if (!r.warning.empty()) os << "\n- " << r.name << ": " << r.warning;
  if (!c.only_a.empty()) os << "\n- only in A: " << join(c.only_a, ", ");
  if (!c.only_b.empty()) os << "\n- only in B: " << join(c.only_b, ", ");
  os << "\n";
  return os.str();
}

json bench_comparison_json(const BenchComparison& c) {
  json rows = json::array();
  for (const auto& r : c.rows) {
    json ms = json::array();
    for (const auto& m : r.metrics)
      ms.push_back({{"metric", m.metric},
                    {"unit", m.unit},
                    {"higher_is_better", m.higher_is_better},
                    {"energy", m.energy},
                    {"a", m.a},
                    {"b", m.b},
                    {"median_a", m.median_a},
                    {"median_b", m.median_b},
                    {"change", m.change},
                    {"u1", m.utest ? json(m.utest->u1) : json(nullptr)},
                    {"p", m.utest ? json(m.utest->p) : json(nullptr)},
                    {"method", m.utest ? json(m.utest->method) : json(nullptr)},
                    {"significant", m.significant}});
    rows.push_back({{"name", r.name},
                    {"reps_a", r.reps_a},
                    {"reps_b", r.reps_b},
                    {"low_confidence_energy", r.low_confidence_energy},
                    {"warning", r.warning.empty() ? json(nullptr) : json(r.warning)},
                    {"energy_note", r.energy_note.empty() ? json(nullptr) : json(r.energy_note)},
                    {"metrics", ms}});
  }
  return {{"kind", "flopwatt_bench comparison"},
          {"a", c.file_a},
          {"b", c.file_b},
          {"headline_a", c.headline_a},
          {"headline_b", c.headline_b},
          {"alpha", c.alpha},
          {"test", "two-sided Mann-Whitney U on the repetitions; exact when a side has <= 8 values and none tie, "
                   "else normal approximation with tie and continuity corrections"},
          {"notes", c.notes},
          {"only_a", c.only_a},
          {"only_b", c.only_b},
          {"rows", rows}};
}

std::string bench_comparison_csv(const BenchComparison& c) {
  std::ostringstream os;
  os << "name,metric,unit,reps_a,reps_b,median_a,median_b,change,p,method,significant,low_confidence_energy\n";
  for (const auto& r : c.rows)
    for (const auto& m : r.metrics)
      os << csv_escape(r.name) << ',' << csv_escape(m.metric) << ',' << csv_escape(m.unit) << ',' << m.a.size() << ','
         << m.b.size() << ',' << fmt::format("{:.9g},{:.9g},{:.9g}", m.median_a, m.median_b, m.change) << ','
         << (m.utest ? fmt::format("{:.9g}", m.utest->p) : "") << ',' << (m.utest ? m.utest->method : "") << ','
         << (m.significant ? "true" : "false") << ',' << (m.energy && r.low_confidence_energy ? "true" : "false")
         << '\n';
  return os.str();
}

}  // namespace flopwatt
