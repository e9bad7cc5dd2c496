// power/number_text.h writes numbers into reasons users read and tests match
// ("window 0.8 s < 3 x 1 s update interval"): it must write what printf wrote
// there before, digit for digit, over every magnitude a reason can hold.
#include "power/number_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

namespace {

using flopwatt::power::e0;
using flopwatt::power::f0;
using flopwatt::power::g3;
using flopwatt::power::text;

std::string printf_of(const char* format, double v) {
  char b[400];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

std::vector<double> values() {
  std::vector<double> v = {0.0,   -0.0,   1.0,    0.8,     3.0,    0.1,       0.01,   0.001,  1e-07, 1.5e-07,
                           9.995, 9.9949, 99.95,  999.5,   1000.0, 0.00012345, 0.0801, 2.5,    0.5,   1e12,
                           1e13,  7.14e14, 5e-324, 1e308,  -3.75,  123456789.0, 0.4999, 1.4999, 2.5e-5, 65504.0,
                           std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::denorm_min()};
  std::mt19937_64 rng(20261128);
  std::uniform_real_distribution<double> mantissa(1.0, 10.0);
  std::uniform_int_distribution<int> exponent(-12, 16);
  for (int i = 0; i < 20000; ++i) v.push_back(mantissa(rng) * std::pow(10.0, exponent(rng)));
  // Ties and near-ties of the rounding to 3 significant digits.
  for (int m = 100; m < 1000; ++m)
    for (int e = -6; e <= 6; ++e) v.push_back((m + 0.5) * std::pow(10.0, e - 2));
  return v;
}

TEST(NumberText, WritesWhatPrintfWrites) {
  for (const double x : values()) {
    EXPECT_EQ(text(g3(x)), printf_of("%.3g", x)) << x;
    EXPECT_EQ(text(f0(x)), printf_of("%.0f", x)) << x;
    EXPECT_EQ(text(e0(x)), printf_of("%.0e", x)) << x;
  }
}

TEST(NumberText, JoinsTextAndNumbersInOrder) {
  EXPECT_EQ(text("window ", g3(0.8), " s < ", f0(3), " x ", g3(1.0), " s update interval"),
            "window 0.8 s < 3 x 1 s update interval");
  std::string s = "a";
  flopwatt::power::append_text(s, "; ", g3(1e-07), " s");
  EXPECT_EQ(s, "a; 1e-07 s");
}

}  // namespace
