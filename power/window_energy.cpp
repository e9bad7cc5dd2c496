#include "power/window_energy.h"

#include <algorithm>
#include <string>

#include "power/number_text.h"

namespace flopwatt::power {

namespace {

std::size_t first_at_or_after(const std::vector<Sample>& s, std::int64_t t) {
  return std::size_t(std::lower_bound(s.begin(), s.end(), t, [](const Sample& a, std::int64_t x) { return a.t_ns < x; }) -
                     s.begin());
}

// Written straight into why_low, with room for the longest reason and the
// refusal judge_window may put in front of it, so the text grows in place: a
// short window gets a reason from nearly every source, each time it is judged.
template <class... Parts>
void add_reason(WindowEnergy& w, const Parts&... parts) {
  w.low_confidence = true;
  w.why_low.reserve(w.why_low.size() + 256);
  append_text(w.why_low, w.why_low.empty() ? "" : "; ", parts...);
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

double min_trusted_window_s(double update_interval_s) {
  return update_interval_s > 0 ? kMinUpdateIntervals * update_interval_s : 0;
}

double max_uncovered_s(const WindowRules& r) { return 2 * std::max(r.expected_spacing_s, r.update_interval_s); }

namespace {

// Energy over [a, b], a and b inside the samples' span: a counter's
// interpolated difference, a gauge's trapezoid over the interpolated edges and
// every sample strictly between them.
double covered_energy_j(const std::vector<Sample>& s, Kind kind, std::int64_t a, std::int64_t b) {
  if (kind == Kind::Counter) return value_at(s, b) - value_at(s, a);
  double j = 0, pt = double(a), pv = value_at(s, a);
  for (std::size_t i = first_at_or_after(s, a); i < s.size() && s[i].t_ns < b; ++i) {
    if (s[i].t_ns <= a) continue;
    j += 0.5 * (pv + s[i].value) * (double(s[i].t_ns) - pt);
    pt = double(s[i].t_ns);
    pv = s[i].value;
  }
  j += 0.5 * (pv + value_at(s, b)) * (double(b) - pt);
  return j * 1e-9;
}

}  // namespace

WindowEnergy integrate_window(const std::vector<Sample>& s, Kind kind, std::int64_t t0, std::int64_t t1,
                              const WindowRules& rules) {
  WindowEnergy w;
  if (t1 <= t0) {
    add_reason(w, "empty window");
    return w;
  }
  if (s.empty()) {
    w.gap = true;
    add_reason(w, "no samples");
    return w;
  }
  const double dur = double(t1 - t0) * 1e-9;
  const std::size_t lo = first_at_or_after(s, t0);
  const std::size_t hi = first_at_or_after(s, t1);  // first sample at or after t1
  std::size_t inside = 0;
  for (std::size_t i = lo; i < s.size() && s[i].t_ns <= t1; ++i) ++inside;
  w.samples = inside;

  // In double: stamps far apart (a corrupt source) must not overflow the difference.
  auto span = [](std::int64_t later, std::int64_t earlier) { return double(later) - double(earlier); };
  // What the samples cover: nothing before the first or after the last is
  // known, so neither a gauge nor a counter is held there (window_coverage_rule).
  const std::int64_t a = std::max(t0, s.front().t_ns), b = std::min(t1, s.back().t_ns);
  const double covered_s = b > a ? span(b, a) * 1e-9 : 0;
  w.covered_s = covered_s;
  const double head_s = std::max(0.0, span(s.front().t_ns, t0) * 1e-9);
  const double tail_s = std::max(0.0, span(t1, s.back().t_ns) * 1e-9);
  if (covered_s <= 0 || head_s + tail_s > max_uncovered_s(rules)) {
    w.gap = true;
    add_reason(w, "samples cover ", g3(covered_s), " s of the ", g3(dur), " s window (", g3(head_s + tail_s),
               " s uncovered > 2 x ", g3(std::max(rules.expected_spacing_s, rules.update_interval_s)),
               " s between samples): no energy figure");
    return w;
  }
  // An uncovered edge within the rule is shorter than the source's own sample
  // spacing: the window's energy is the covered part's mean power over the
  // whole window, not an edge sample held flat.
  w.j = std::max(0.0, covered_energy_j(s, kind, a, b) * (dur / covered_s));
  w.avg_power_w = w.j / dur;

  if (dur < min_trusted_window_s(rules.update_interval_s))
    add_reason(w, "window ", g3(dur), " s < ", f0(kMinUpdateIntervals), " x ", g3(rules.update_interval_s),
               " s update interval");

  // The longest stretch between samples that the result depends on. A gauge
  // depends on every sample inside the window; a counter integrates in
  // hardware, so only the two pairs of samples interpolated at the edges matter.
  const std::size_t ia = lo > 0 ? lo - 1 : 0;
  const std::size_t ib = hi < s.size() ? hi : s.size() - 1;
  double gap = 0;
  if (kind == Kind::Gauge) {
    for (std::size_t i = ia; i < ib; ++i) gap = std::max(gap, span(s[i + 1].t_ns, s[i].t_ns));
  } else {
    if (ia + 1 <= ib) gap = std::max(gap, span(s[ia + 1].t_ns, s[ia].t_ns));
    if (ib >= 1 && ib - 1 >= ia) gap = std::max(gap, span(s[ib].t_ns, s[ib - 1].t_ns));
  }
  gap = std::max(gap, (head_s + tail_s) * 1e9);
  if (rules.expected_spacing_s > 0 && double(gap) * 1e-9 > 2 * rules.expected_spacing_s)
    add_reason(w, "sampling gap ", f0(double(gap) * 1e-6), " ms > 2 x ", f0(rules.expected_spacing_s * 1e3), " ms");

  const double v0 = value_at(s, t0), v1 = value_at(s, t1);
  if (kind == Kind::Counter && v1 == v0 && inside >= 2 && dur > min_trusted_window_s(rules.update_interval_s))
    add_reason(w, "counter did not change over the ", g3(dur), " s window (stopped updating?)");
  return w;
}

}  // namespace flopwatt::power
