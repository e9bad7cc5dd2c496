// The change-point test of a metric's history over stored runs: `flopwatt
// history` marks with it, and `flopwatt site` marks its series pages with it.
#pragma once
#include <cstddef>
#include <vector>

namespace flopwatt {

// How many points on each side of a candidate the change test looks at.
inline constexpr std::size_t kChangeWindow = 5;

// A step, not a blip: point i starts a change when the medians of the k
// points before it and the k points from it on (k as large as both sides
// allow, at least 2, at most kChangeWindow) differ by more than the threshold
// (a fraction: 0.05 is 5%) and point i itself has left the old level; of
// consecutive candidates only the first is marked.
std::vector<bool> change_points(const std::vector<double>& v, double threshold);

}  // namespace flopwatt
