#include "harness/prom/openmetrics.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include <fmt/core.h>

namespace flopwatt::prom {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// OpenMetrics escapes \, " and newline in label values and \, newline in HELP.
std::string escaped(const std::string& s, bool quote) {
  std::string o;
  for (char c : s) {
    if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else if (c == '"' && quote) o += "\\\"";
    else o += c;
  }
  return o;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v < 0 ? "-Inf" : "+Inf";
  return fmt::format("{}", v);
}

std::string labels_text(const prometheus::ClientMetric& m, const std::string& extra_name = {},
                        const std::string& extra_value = {}) {
  if (m.label.empty() && extra_name.empty()) return {};
  std::string s = "{";
  const char* sep = "";
  for (const auto& l : m.label) {
    s += fmt::format("{}{}=\"{}\"", sep, l.name, escaped(l.value, true));
    sep = ",";
  }
  if (!extra_name.empty()) s += fmt::format("{}{}=\"{}\"", sep, extra_name, extra_value);
  return s + "}";
}

// A unit the family's name ends with, for the UNIT line (it must be a suffix).
std::string unit_of(const std::string& family_name) {
  for (const char* u : {"joules", "watts", "seconds", "bytes", "ratio"})
    if (ends_with(family_name, std::string("_") + u)) return u;
  return {};
}

void write_family(std::ostringstream& out, const prometheus::MetricFamily& f) {
  std::string name = f.name, type = "unknown", suffix;
  switch (f.type) {
    case prometheus::MetricType::Counter:
      type = "counter";
      if (ends_with(name, "_total")) name.resize(name.size() - 6);
      suffix = "_total";
      break;
    case prometheus::MetricType::Gauge:
      type = "gauge";
      if (ends_with(name, "_info")) {
        type = "info";
        name.resize(name.size() - 5);
        suffix = "_info";
      }
      break;
    case prometheus::MetricType::Histogram: type = "histogram"; break;
    case prometheus::MetricType::Summary: type = "summary"; break;
    default: break;
  }
  out << "# TYPE " << name << ' ' << type << '\n';
  if (const std::string u = unit_of(name); !u.empty()) out << "# UNIT " << name << ' ' << u << '\n';
  if (!f.help.empty()) out << "# HELP " << name << ' ' << escaped(f.help, false) << '\n';
  for (const auto& m : f.metric) {
    // A sample stamped with when it was read (OpenMetrics: seconds since the epoch).
    const std::string stamp = m.timestamp_ms ? fmt::format(" {}.{:03d}", m.timestamp_ms / 1000, int(m.timestamp_ms % 1000)) : "";
    switch (f.type) {
      case prometheus::MetricType::Counter:
        out << name << suffix << labels_text(m) << ' ' << number(m.counter.value) << stamp << '\n';
        break;
      case prometheus::MetricType::Gauge: out << name << suffix << labels_text(m) << ' ' << number(m.gauge.value) << stamp << '\n'; break;
      case prometheus::MetricType::Histogram: {
        for (const auto& b : m.histogram.bucket)
          if (!std::isinf(b.upper_bound))
            out << name << "_bucket" << labels_text(m, "le", number(b.upper_bound)) << ' ' << b.cumulative_count << '\n';
        out << name << "_bucket" << labels_text(m, "le", "+Inf") << ' ' << m.histogram.sample_count << '\n';
        out << name << "_count" << labels_text(m) << ' ' << m.histogram.sample_count << '\n';
        out << name << "_sum" << labels_text(m) << ' ' << number(m.histogram.sample_sum) << '\n';
        break;
      }
      default: out << name << labels_text(m) << ' ' << number(m.untyped.value) << '\n'; break;
    }
  }
}

// The q value of one media range ("text/plain;version=0.0.4;q=0.5" -> 0.5).
double q_of(const std::string& range) {
  const auto p = range.find("q=");
  return p == std::string::npos ? 1.0 : std::atof(range.c_str() + p + 2);
}

}  // namespace

std::string to_openmetrics(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream out;
  for (const auto& f : families) write_family(out, f);
  out << "# EOF\n";
  return out.str();
}

bool wants_openmetrics(const char* accept) {
  if (!accept) return false;
  double om = 0, text = 0;
  std::stringstream ss(accept);
  for (std::string range; std::getline(ss, range, ',');) {
    const auto start = range.find_first_not_of(' ');
    if (start == std::string::npos) continue;
    range = range.substr(start);
    const double q = q_of(range);
    if (range.rfind("application/openmetrics-text", 0) == 0) om = std::max(om, q);
    else if (range.rfind("text/plain", 0) == 0 || range.rfind("*/*", 0) == 0) text = std::max(text, q);
  }
  return om > 0 && om >= text;
}

}  // namespace flopwatt::prom
