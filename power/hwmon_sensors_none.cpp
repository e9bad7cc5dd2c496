// Built when libsensors is absent: hwmon is read from sysfs directly everywhere.
#include "power/hwmon.h"

namespace flopwatt::power {

bool sensors_read_value(const void*, int, double&) { return false; }

std::vector<HwmonChannel> scan_hwmon_libsensors(std::string* problem) {
  if (problem) *problem = "flopwatt was built without libsensors (Debian: libsensors-dev)";
  return {};
}

}  // namespace flopwatt::power
