// Mains or battery, and how full: the run context, and the mains-vs-battery
// campaign's check that the machine really is on the power it claims.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace flopwatt::power {

enum class BatteryStatus { Unknown, Charging, Discharging, NotCharging, Full };
const char* to_string(BatteryStatus s);  // "charging", "discharging", "not charging", "full", "unknown"
BatteryStatus parse_battery_status(const std::string& sysfs_status);

struct BatteryState {
  std::string name;                  // BAT0
  BatteryStatus status = BatteryStatus::Unknown;
  std::optional<double> percent;     // capacity, or energy_now / energy_full
  std::optional<double> energy_wh;   // energy_now (or charge_now x voltage_now)
  std::optional<double> energy_full_wh;
};

struct PowerState {
  std::optional<bool> ac_online;       // a Mains/USB supply online; nullopt when nothing tells
  bool ac_inferred = false;            // no adapter entry: guessed from the batteries' status
  std::string ac_note;                 // why ac_online is what it is, where that is not plain
  std::vector<BatteryState> batteries;
  std::optional<double> battery_percent;  // all batteries together
};

// Reads <root>/sys/class/power_supply; nullopt when there is no supply at all
// (a desktop or a virtual machine). Never throws.
std::optional<PowerState> read_power_state(const std::string& root);
// The same without the charge figures (percent, energy_wh, energy_full_wh,
// battery_percent stay empty): adapters, mains or battery and each battery's
// status, which is all a supply track keeps, in fewer reads. A Meter polls it
// at windows' ends, and each read through ACPI costs milliseconds on a laptop.
std::optional<PowerState> read_supply_state(const std::string& root);

}  // namespace flopwatt::power
