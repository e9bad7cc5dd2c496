// Laptop batteries through /sys/class/power_supply (type Battery): a fast
// gauge from power_now (or current_now x voltage_now) and a slower one from
// energy_now (or charge_now) differences.
#pragma once
#include <string>

#include "power/source.h"

namespace flopwatt::power {

void probe_battery(const std::string& root, Discovery& d);

}  // namespace flopwatt::power
