// Net energy (above idle) only when it stands out of the idle baseline's own
// noise: a few percent over idle divided into the FLOPs gives an absurd
// FLOP/J, so below the bound the answer is "none", with the reason.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace flopwatt::power {

struct IdleBaseline {
  double mean_w = 0;  // mean idle power
  double sd_w = 0;    // sample standard deviation of the mean power of the idle windows
  int windows = 0;    // how many idle windows mean_w and sd_w come from
};

// From the mean power of each idle window (all of the same length).
IdleBaseline idle_baseline_from_windows(const std::vector<double>& window_mean_w);

struct NetEnergy {
  std::optional<double> net_j;  // gross - idle mean x window; nullopt when within the noise
  double idle_j = 0;            // idle mean x window
  double noise_j = 0;           // the bound net_j had to exceed
  std::string bound;            // the bound in words, for run.json
  std::string reason;           // why net_j is null; empty otherwise
};

// The bound: net energy must exceed 2 x sd_w x window_s, the spread of the
// idle baseline's own window means carried over the measured window (about
// a 95% interval if idle power is normal). Needs at least 2 idle windows.
NetEnergy net_energy(double gross_j, double window_s, const IdleBaseline& idle);

}  // namespace flopwatt::power
