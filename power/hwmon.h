// hwmon chips: power (uW) and energy (uJ) channels as sources, temperatures
// for the run context and a cool-down guard. On the real root the channels
// come through libsensors (lm-sensors), which reads /sys itself; under a
// fixture root a direct sysfs reader takes its place.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "power/source.h"

namespace flopwatt::power {

struct HwmonChannel {
  enum class Type { Power, Energy, Temp };
  std::string chip;        // chip name, made unique (amdgpu, amdgpu-1)
  std::string label;       // PPT, Tctl, power1
  Type type = Type::Power;
  std::string path;        // sysfs attribute file (sysfs reader)
  double scale = 1;        // attribute units -> W, J, degC
  double update_interval_s = 0;  // from the chip's update_interval, 0 when unknown
  std::string hwmon_dir;   // the chip's hwmonN directory
  const void* chip_handle = nullptr;  // libsensors chip, when read through libsensors
  int subfeature = -1;
};

// Every power/energy/temp input under <root>/sys/class/hwmon, read as files.
std::vector<HwmonChannel> scan_hwmon_sysfs(const std::string& root);
// The same through libsensors (real /sys only); empty with *problem set when unusable.
std::vector<HwmonChannel> scan_hwmon_libsensors(std::string* problem);
// Value in W, J or degC.
std::optional<double> read_hwmon_channel(const HwmonChannel& c, int* err = nullptr);

// Domain of a power/energy channel (amdgpu PPT on an APU -> package).
std::string hwmon_domain(const HwmonChannel& c);

void probe_hwmon(const std::string& root, Discovery& d);

}  // namespace flopwatt::power
