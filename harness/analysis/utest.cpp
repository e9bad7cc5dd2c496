#include "harness/analysis/utest.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace flopwatt {

namespace {

// Midranks (1-based) of the pooled sample, and sum over tie groups of t^3 - t.
struct Ranked {
  std::vector<double> rank;  // in the pooled order: x first, then y
  double tie_term = 0;
};

Ranked rank_pooled(const std::vector<double>& pooled) {
  const std::size_t n = pooled.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return pooled[a] < pooled[b]; });
  Ranked r;
  r.rank.assign(n, 0);
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i + 1;
    while (j < n && pooled[order[j]] == pooled[order[i]]) ++j;
    const double mid = (double(i + 1) + double(j)) / 2.0;  // ranks i+1..j share their mean
    for (std::size_t k = i; k < j; ++k) r.rank[order[k]] = mid;
    const double t = double(j - i);
    r.tie_term += t * t * t - t;
    i = j;
  }
  return r;
}

// P(U >= u) under the null for sample sizes m and n, no ties: every one of the
// C(m+n, m) orderings is equally likely, and the number of them with U = k is
// the coefficient of q^k in the Gaussian binomial [m+n choose m]_q, built as
// prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i); each partial product is itself a
// Gaussian binomial, so every step leaves a polynomial. long double keeps the
// counts' relative precision well past what a p-value needs.
double exact_upper_tail(std::size_t m, std::size_t n, double u) {
  if (m > n) std::swap(m, n);
  const std::size_t deg = m * n;
  std::vector<long double> c(deg + 1, 0.0L);
  c[0] = 1;
  std::size_t cur = 0;  // degree of the product so far: i x n after step i
  for (std::size_t i = 1; i <= m; ++i) {
    const std::size_t a = n + i;  // multiply by (1 - q^a)
    const std::size_t next = cur + n;
    for (std::size_t k = std::min(deg, cur + a); k >= a; --k) c[k] -= c[k - a];
    for (std::size_t k = i; k <= next; ++k) c[k] += c[k - i];  // divide by (1 - q^i)
    // What lies above the quotient's degree is the dividend's remainder, not a count.
    std::fill(c.begin() + std::ptrdiff_t(std::min(deg, next) + 1), c.end(), 0.0L);
    cur = next;
  }
  // Symmetry: P(U >= u) = P(U <= mn - u).
  const double lo = double(deg) - u;
  long double below = 0, all = 0;
  for (std::size_t k = 0; k <= deg; ++k) {
    all += c[k];
    if (double(k) <= lo + 1e-9) below += c[k];
  }
  return double(below / all);
}

}  // namespace

UTestResult mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y) {
  UTestResult r;
  const std::size_t n1 = x.size(), n2 = y.size();
  if (n1 == 0 || n2 == 0) {
    r.method = "none";
    return r;
  }
  std::vector<double> pooled(x);
  pooled.insert(pooled.end(), y.begin(), y.end());
  const Ranked rk = rank_pooled(pooled);
  double r1 = 0;
  for (std::size_t i = 0; i < n1; ++i) r1 += rk.rank[i];
  r.u1 = r1 - double(n1) * double(n1 + 1) / 2.0;
  const double u2 = double(n1) * double(n2) - r.u1;
  const double u = std::max(r.u1, u2);
  if ((n1 <= 8 || n2 <= 8) && rk.tie_term == 0) {
    r.method = "exact";
    r.p = 2.0 * exact_upper_tail(n1, n2, u);
  } else {
    r.method = "normal approximation";
    const double n = double(n1 + n2);
    const double var = double(n1) * double(n2) / 12.0 * ((n + 1.0) - rk.tie_term / (n * (n - 1.0)));
    if (var <= 0) {
      r.p = 1;  // every value tied: no evidence either way
    } else {
      const double z = (u - double(n1) * double(n2) / 2.0 - 0.5) / std::sqrt(var);
      r.p = std::erfc(z / std::sqrt(2.0));  // 2 x the normal upper tail at z
    }
  }
  r.p = std::clamp(r.p, 0.0, 1.0);
  return r;
}

}  // namespace flopwatt
