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
  std::string channel;     // power1, energy2: the attribute prefix the label names
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

// What a chip's power measures, from its driver and its device: only a
// CPU-side class can measure CPU work (power/headline.h's figure_usability
// refuses the others for it).
enum class HwmonDeviceClass {
  ApuGpu,       // amdgpu on an APU: PPT is the whole package (CPU cores included)
  DiscreteGpu,  // a graphics board of its own: its power is not the CPU's
  Cpu,          // a CPU energy driver (amd_energy, zenergy, zenpower)
  Storage,      // nvme, drivetemp
  Platform,     // a board or firmware sensor (ACPI, Super I/O, I2C): what it meters is not said
  Unknown,      // a driver flopwatt has no kernel source for
};
const char* to_string(HwmonDeviceClass c);  // "APU", "discrete GPU", "CPU", ...

struct HwmonDevice {
  HwmonDeviceClass cls = HwmonDeviceClass::Unknown;
  std::string why;  // the evidence: "gpu_metrics format 1", "fan1_input (hidden on APUs)"
};
// Reads the chip's attributes and its device (c.hwmon_dir) below the root.
HwmonDevice hwmon_device_class(const HwmonChannel& c);

// Domain of a power/energy channel, from its device class: "package" for an
// APU's PPT or a socket's energy, "gpu" for a discrete board, "storage",
// "platform", "device" (unknown); each but the CPU's names a device beside it.
std::string hwmon_domain(const HwmonChannel& c);

void probe_hwmon(const std::string& root, Discovery& d);

}  // namespace flopwatt::power
