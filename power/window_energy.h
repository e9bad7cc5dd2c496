// Energy of one source over a [t0, t1] window from its samples: counters are
// interpolated at the edges, gauges integrated by trapezoid; the confidence
// says whether the window is long and densely sampled enough to trust.
#pragma once
#include <cstdint>
#include <vector>

#include "power/sampler.h"
#include "power/source.h"

namespace flopwatt::power {

struct WindowRules {
  double update_interval_s = 0;   // how often the source's value changes
  double expected_spacing_s = 0;  // how often the sampler reads it
};

// The coverage rule, the one place it lives: energy comes only from time the
// source's samples cover. Before a source's first sample and after its last
// nothing is known, so no value is held there; when those uncovered edges
// together exceed max_uncovered_s (two of the source's sample spacings or
// update intervals, whichever is longer) -- an external log whose stamps lie
// outside the window, a log that ends before the program does -- the window is
// a gap with no energy figure and the reason ("samples cover 1 s of the 3 s
// window"). Within it, the covered part's mean power stands for the window.
double max_uncovered_s(const WindowRules& rules);

// The span rule, the one place it lives: a window shorter than three of its
// source's update intervals is low confidence, since a reading that changes
// once an interval cannot place the window's edges closer than that. The run
// lengthens its loops to this span and does not wait for a source's next
// sample when the window falls short of it anyway. 0 when the interval is unknown.
constexpr double kMinUpdateIntervals = 3;
double min_trusted_window_s(double update_interval_s);

// samples: sorted by t_ns. Never negative.
WindowEnergy integrate_window(const std::vector<Sample>& samples, Kind kind, std::int64_t t0_ns,
                              std::int64_t t1_ns, const WindowRules& rules);

// Value at t: linear between the neighbouring samples, held flat outside them.
double value_at(const std::vector<Sample>& samples, std::int64_t t_ns);

}  // namespace flopwatt::power
