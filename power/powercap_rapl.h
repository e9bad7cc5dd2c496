// RAPL through the powercap sysfs interface: /sys/class/powercap/intel-rapl:*
// zones and subzones (also used by the kernel for AMD), energy_uj counters
// that wrap at max_energy_range_uj.
#pragma once
#include <cstdint>
#include <string>

#include "power/source.h"

namespace flopwatt::power {

// Appends every powercap RAPL zone under root to d: available ones as sources
// and every one (or the reason there is none) as a status.
void probe_powercap(const std::string& root, Discovery& d);

// Domain of a zone from its `name` file: package-0 -> package, psys -> psys.
std::string powercap_domain(const std::string& zone_name);

// The reason and fix for an energy_uj that could not be read.
std::string powercap_read_reason(int err, const std::string& path);
std::string powercap_read_fix(int err);

}  // namespace flopwatt::power
