#include "harness/analysis/change_points.h"

#include <algorithm>
#include <cmath>

namespace flopwatt {

namespace {

// The median of at most kChangeWindow values, on the stack: it runs twice per point.
double median(const double* first, std::size_t n) {
  double v[kChangeWindow];
  for (std::size_t i = 0; i < n; ++i) {  // insertion sort: n is at most kChangeWindow
    std::size_t j = i;
    for (; j > 0 && v[j - 1] > first[i]; --j) v[j] = v[j - 1];
    v[j] = first[i];
  }
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<bool> change_points(const std::vector<double>& v, double thr) {
  std::vector<bool> mark(v.size(), false);
  for (std::size_t i = 2; i + 2 <= v.size(); ++i) {
    const std::size_t k = std::min({i, v.size() - i, kChangeWindow});
    const double b = median(v.data() + (i - k), k);
    const double a = median(v.data() + i, k);
    mark[i] = b != 0 && std::abs(a - b) / std::abs(b) > thr && std::abs(v[i] - b) / std::abs(b) > thr && !mark[i - 1];
  }
  return mark;
}

}  // namespace flopwatt
