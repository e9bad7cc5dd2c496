#pragma once
#include <vector>

#include "harness/output/run_model.h"

namespace flopwatt {

// Quantile by linear interpolation between order statistics (type 7).
double quantile(std::vector<double> v, double q);
// Median, p10, p90, total, mean, min, max and a distribution-free 95% CI of the
// median from binomial order statistics (exact for n >= 6, else min..max).
TimeStats summarize(const std::vector<double>& samples);

// Fills flop_per_s_window, rep_max_over_median and stalled from the
// measurement's repetitions and FLOP count (nothing for a skipped row or one
// without repetitions).
//
// Why the window and not the median for FLOP/J's partner: energy is only
// known over the whole window (a counter read 1 ms apart, or a gauge every few
// seconds, cannot be split per repetition), so a median FLOP/J does not exist.
// FLOP/J is total FLOPs / window energy; FLOP/s on that basis is total FLOPs /
// window time, and FLOP/J x mean W = FLOP/s window exactly. The median FLOP/s
// stays as its own column: it is the robust speed figure, but a stalled
// repetition moves FLOP/J and not the median, which the stall flag reports.
void set_window_basis(Measurement& m);

}  // namespace flopwatt
