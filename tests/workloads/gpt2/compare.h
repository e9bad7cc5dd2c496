// Element-wise closeness with a stated tolerance: |got - want| <= atol + rtol |want|.
// NaN or Inf in `got` always fails. The failure message names the worst element.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace flopwatt::gpt2::testing {

inline ::testing::AssertionResult all_close(const std::string& what, const float* got, const float* want,
                                            std::int64_t n, double rtol, double atol) {
  std::int64_t worst = -1;
  double worst_ratio = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(want[i])) {
      if (std::isfinite(want[i]) || got[i] != want[i])
        return ::testing::AssertionFailure() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
      continue;
    }
    const double err = std::abs(double(got[i]) - want[i]);
    const double ratio = err / (atol + rtol * std::abs(double(want[i])));
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = i;
    }
  }
  if (worst_ratio <= 1.0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << n << " elements, worst [" << worst << "] got "
                                       << got[worst] << " want " << want[worst] << " (err "
                                       << std::abs(double(got[worst]) - want[worst]) << " > atol " << atol
                                       << " + rtol " << rtol << " x |want|)";
}

inline ::testing::AssertionResult all_close(const std::string& what, const std::vector<float>& got,
                                            const std::vector<float>& want, double rtol, double atol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << what << ": size " << got.size() << " != " << want.size();
  return all_close(what, got.data(), want.data(), std::int64_t(got.size()), rtol, atol);
}

inline std::vector<float> random_vector(std::int64_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = u(g);
  return v;
}

}  // namespace flopwatt::gpt2::testing
