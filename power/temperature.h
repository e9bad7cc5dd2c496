// Temperatures for the run context (start/end) and a cool-down guard.
#pragma once
#include <string>
#include <vector>

namespace flopwatt::power {

struct Temperature {
  std::string id;       // hwmon:k10temp:Tctl, thermal:x86_pkg_temp
  double celsius = 0;
};

// hwmon temperature inputs (libsensors on the real root, sysfs under a fixture
// root) and /sys/class/thermal zones. Never throws; empty when none.
std::vector<Temperature> read_temperatures(const std::string& root);

}  // namespace flopwatt::power
