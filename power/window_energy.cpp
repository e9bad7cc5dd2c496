#include "power/window_energy.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace flopwatt::power {

namespace {

std::size_t first_at_or_after(const std::vector<Sample>& s, std::int64_t t) {
  return std::size_t(std::lower_bound(s.begin(), s.end(), t, [](const Sample& a, std::int64_t x) { return a.t_ns < x; }) -
                     s.begin());
}

void add_reason(WindowEnergy& w, const std::string& r) {
  w.low_confidence = true;
  w.why_low += (w.why_low.empty() ? "" : "; ") + r;
}

std::string fmt(const char* f, double a, double b = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

}  // namespace

double value_at(const std::vector<Sample>& s, std::int64_t t) {
  if (s.empty()) return 0;
  const std::size_t i = first_at_or_after(s, t);
  if (i == 0) return s.front().value;
  if (i == s.size()) return s.back().value;
  const Sample& a = s[i - 1];
  const Sample& b = s[i];
  if (b.t_ns == t || b.t_ns == a.t_ns) return b.value;
  const double f = double(t - a.t_ns) / double(b.t_ns - a.t_ns);
  return a.value + f * (b.value - a.value);
}

WindowEnergy integrate_window(const std::vector<Sample>& s, Kind kind, std::int64_t t0, std::int64_t t1,
                              const WindowRules& rules) {
  WindowEnergy w;
  if (t1 <= t0) {
    add_reason(w, "empty window");
    return w;
  }
  if (s.empty()) {
    add_reason(w, "no samples");
    return w;
  }
  const double dur = double(t1 - t0) * 1e-9;
  const std::size_t lo = first_at_or_after(s, t0);
  const std::size_t hi = first_at_or_after(s, t1);  // first sample at or after t1
  std::size_t inside = 0;
  for (std::size_t i = lo; i < s.size() && s[i].t_ns <= t1; ++i) ++inside;
  w.samples = inside;

  const double v0 = value_at(s, t0), v1 = value_at(s, t1);
  if (kind == Kind::Counter) {
    w.j = std::max(0.0, v1 - v0);
  } else {
    // Trapezoid over the interpolated edge values and every sample strictly inside.
    double j = 0, pt = double(t0), pv = v0;
    for (std::size_t i = lo; i < s.size() && s[i].t_ns < t1; ++i) {
      if (s[i].t_ns <= t0) continue;
      j += 0.5 * (pv + s[i].value) * (double(s[i].t_ns) - pt);
      pt = double(s[i].t_ns);
      pv = s[i].value;
    }
    j += 0.5 * (pv + v1) * (double(t1) - pt);
    w.j = std::max(0.0, j * 1e-9);
  }
  w.avg_power_w = w.j / dur;

  if (rules.update_interval_s > 0 && dur < 3 * rules.update_interval_s)
    add_reason(w, fmt("window %.3g s < 3 x %.3g s update interval", dur, rules.update_interval_s));

  // The longest stretch without samples that the result depends on. A gauge
  // depends on every sample inside the window; a counter integrates in
  // hardware, so only the two pairs of samples interpolated at the edges matter.
  const std::size_t a = lo > 0 ? lo - 1 : 0;
  const std::size_t b = hi < s.size() ? hi : s.size() - 1;
  // In double: stamps far apart (a corrupt source) must not overflow the difference.
  auto span = [](std::int64_t later, std::int64_t earlier) { return double(later) - double(earlier); };
  double gap = 0;
  if (kind == Kind::Gauge) {
    for (std::size_t i = a; i < b; ++i) gap = std::max(gap, span(s[i + 1].t_ns, s[i].t_ns));
  } else {
    if (a + 1 <= b) gap = std::max(gap, span(s[a + 1].t_ns, s[a].t_ns));
    if (b >= 1 && b - 1 >= a) gap = std::max(gap, span(s[b].t_ns, s[b - 1].t_ns));
  }
  if (s[a].t_ns > t0) gap = std::max(gap, span(s[a].t_ns, t0));
  if (s[b].t_ns < t1) gap = std::max(gap, span(t1, s[b].t_ns));
  if (rules.expected_spacing_s > 0 && double(gap) * 1e-9 > 2 * rules.expected_spacing_s)
    add_reason(w, fmt("sampling gap %.0f ms > 2 x %.0f ms", double(gap) * 1e-6, rules.expected_spacing_s * 1e3));

  if (kind == Kind::Counter && v1 == v0 && inside >= 2 && dur > 3 * rules.update_interval_s)
    add_reason(w, fmt("counter did not change over the %.3g s window (stopped updating?)", dur));
  return w;
}

}  // namespace flopwatt::power
