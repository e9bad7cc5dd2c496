#include "harness/run/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "harness/output/metrics.h"

namespace flopwatt {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double h = q * double(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - double(lo)) * (v[hi] - v[lo]);
}

TimeStats summarize(const std::vector<double>& samples) {
  TimeStats s;
  if (samples.empty()) return s;
  std::vector<double> v = samples;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  s.median = quantile(v, 0.5);
  s.p10 = quantile(v, 0.1);
  s.p90 = quantile(v, 0.9);
  s.total = std::accumulate(v.begin(), v.end(), 0.0);
  s.mean = s.total / double(n);
  s.min = v.front();
  s.max = v.back();
  // The median's CI from order statistics: the rank of the median in a sample is
  // Binomial(n, 1/2), so ranks n/2 -+ 1.96 sqrt(n)/2 bracket it with ~95%
  // probability whatever the timing distribution (which is skewed, not normal).
  if (n >= 6) {
    const double half = 1.959964 * std::sqrt(double(n)) / 2.0;
    auto lo = static_cast<long>(std::floor(double(n) / 2.0 - half));
    auto hi = static_cast<long>(std::ceil(double(n) / 2.0 + half));
    lo = std::clamp(lo, 0L, long(n) - 1);
    hi = std::clamp(hi, 0L, long(n) - 1);
    s.ci95_lo = v[std::size_t(lo)];
    s.ci95_hi = v[std::size_t(hi)];
  } else {
    s.ci95_lo = s.min;
    s.ci95_hi = s.max;
  }
  return s;
}

void set_window_basis(Measurement& m) {
  if (m.skipped || m.rep_times_s.empty()) return;
  double total = 0, slowest = 0;
  for (double t : m.rep_times_s) {
    total += t;
    slowest = std::max(slowest, t);
  }
  if (total > 0 && m.flop > 0) m.flop_per_s_window = m.flop * double(m.rep_times_s.size()) / total;
  const double median = quantile(m.rep_times_s, 0.5);
  if (median > 0) {
    m.rep_max_over_median = slowest / median;
    m.stalled = slowest > kStallRatio * median;
  }
}

}  // namespace flopwatt
