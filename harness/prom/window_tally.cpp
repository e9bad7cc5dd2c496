#include "harness/prom/window_tally.h"

namespace flopwatt::prom {

void Histogram::observe(double v, const std::vector<double>& bounds) {
  cumulative.resize(bounds.size(), 0);
  for (std::size_t i = 0; i < bounds.size(); ++i) cumulative[i] += v <= bounds[i] ? 1 : 0;
  ++count;
  sum += v;
}

void tally(std::map<std::string, WindowTally>& tallies, const std::string& name, double duration_s,
           const std::optional<std::string>& source, std::optional<double> energy_j, double flop) {
  WindowTally& t = tallies[name];
  t.duration_s.observe(duration_s, kWindowDurationBounds);
  if (!source || !energy_j) return;
  t.energy_j[*source].observe(*energy_j, kWindowEnergyBounds);
  t.flop[*source] += flop;
}

}  // namespace flopwatt::prom
