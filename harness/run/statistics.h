#pragma once
#include <vector>

#include "harness/output/run_model.h"

namespace flopwatt {

// Quantile by linear interpolation between order statistics (type 7).
double quantile(std::vector<double> v, double q);
// Median, p10, p90, total, mean, min, max and a distribution-free 95% CI of the
// median from binomial order statistics (exact for n >= 6, else min..max).
TimeStats summarize(const std::vector<double>& samples);

}  // namespace flopwatt
