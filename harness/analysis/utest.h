// The Mann-Whitney U test (two-sided) on two samples of repetitions, as
// Google Benchmark's tools/compare.py applies it to real and CPU times
// (through scipy.stats.mannwhitneyu with its default method), so flopwatt's
// p-values for the same repetitions are the same numbers.
#pragma once
#include <string>
#include <vector>

namespace flopwatt {

struct UTestResult {
  double u1 = 0;       // U of the first sample: pairs (x, y) with x > y, ties counting 1/2
  double p = 1;        // two-sided p-value
  std::string method;  // "exact" | "normal approximation"
};

// Method as scipy's "auto": the exact null distribution of U when either
// sample has at most 8 values and no value is tied (all orderings equally
// likely, counted as the coefficients of a Gaussian binomial); otherwise the
// normal approximation with the tie-corrected variance and a continuity
// correction of 1/2. p = 2 x P(U >= max(U1, U2)), at most 1. Needs at least
// one value in each sample (else p = 1, method "none"); NaN values are the
// caller's to drop.
UTestResult mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace flopwatt
