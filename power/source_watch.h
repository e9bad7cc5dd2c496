// Watching sources for a short window to learn how they really behave: how
// often each value changes (its measured update interval), whether it moves
// at all, and its mean power. `flopwatt sources` shows this per source.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "power/source.h"

namespace flopwatt::power {

struct SourceWatch {
  bool interval_measured = false;  // at least two changes seen
  double interval_s = 0;           // measured when interval_measured, else the nominal one
  double avg_power_w = 0;
  bool changed = false;            // the value moved during the window
  bool sampled = false;            // at least one sample inside the window
  std::string error;               // the last read error, if any
};

// Samples `sources` every period_s for `seconds` (after a short settling
// time, so the window opens on samples) and returns what each did, by id.
std::map<std::string, SourceWatch> watch_sources(std::vector<std::unique_ptr<PowerSource>> sources,
                                                 double seconds, double period_s = 0.010);

}  // namespace flopwatt::power
