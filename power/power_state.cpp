#include "power/power_state.h"

#include <cctype>

#include "power/sysfs.h"

namespace flopwatt::power {

const char* to_string(BatteryStatus s) {
  switch (s) {
    case BatteryStatus::Charging: return "charging";
    case BatteryStatus::Discharging: return "discharging";
    case BatteryStatus::NotCharging: return "not charging";
    case BatteryStatus::Full: return "full";
    default: return "unknown";
  }
}

BatteryStatus parse_battery_status(const std::string& s) {
  std::string l;
  for (char c : s) l += char(std::tolower(static_cast<unsigned char>(c)));
  if (l == "charging") return BatteryStatus::Charging;
  if (l == "discharging") return BatteryStatus::Discharging;
  if (l == "not charging") return BatteryStatus::NotCharging;
  if (l == "full") return BatteryStatus::Full;
  return BatteryStatus::Unknown;
}

namespace {

// How full a battery is: capacity, else energy_now / energy_full (or the
// charge figures times the voltage).
void read_charge(const std::string& dir, BatteryState& b) {
  if (auto c = read_int(join_path(dir, "capacity"))) b.percent = double(*c);
  auto en = read_int(join_path(dir, "energy_now"));
  auto ef = read_int(join_path(dir, "energy_full"));
  if (en && ef) {
    b.energy_wh = double(*en) * 1e-6;
    b.energy_full_wh = double(*ef) * 1e-6;
  } else {
    auto cn = read_int(join_path(dir, "charge_now"));
    auto cf = read_int(join_path(dir, "charge_full"));
    auto v = read_int(join_path(dir, "voltage_now"));
    if (!v) v = read_int(join_path(dir, "voltage_min_design"));
    if (cn && cf && v) {
      b.energy_wh = double(*cn) * double(*v) * 1e-12;
      b.energy_full_wh = double(*cf) * double(*v) * 1e-12;
    }
  }
  if (!b.percent && b.energy_wh && b.energy_full_wh && *b.energy_full_wh > 0)
    b.percent = 100.0 * *b.energy_wh / *b.energy_full_wh;
}

std::optional<PowerState> read_state(const std::string& root, bool charge) {
  const std::string base = under_root(root, "/sys/class/power_supply");
  const auto names = list_dir(base);
  if (names.empty()) return std::nullopt;
  PowerState ps;
  bool any_adapter = false, any_online = false;
  double now_wh = 0, full_wh = 0, pct_sum = 0;
  bool all_have_energy = true;
  for (const auto& n : names) {
    const std::string dir = join_path(base, n);
    const std::string type = read_trimmed(join_path(dir, "type")).value_or("");
    // Peripheral batteries (a wireless mouse) report scope Device; they do not power the machine.
    if (read_trimmed(join_path(dir, "scope")).value_or("") == "Device") continue;
    if (type == "Mains" || type == "USB") {
      if (auto on = read_int(join_path(dir, "online"))) {
        any_adapter = true;
        any_online = any_online || *on != 0;
      }
    } else if (type == "Battery") {
      if (auto present = read_int(join_path(dir, "present")); present && *present == 0) continue;
      BatteryState b;
      b.name = n;
      b.status = parse_battery_status(read_trimmed(join_path(dir, "status")).value_or(""));
      if (charge) read_charge(dir, b);
      if (b.energy_wh && b.energy_full_wh) {
        now_wh += *b.energy_wh;
        full_wh += *b.energy_full_wh;
      } else {
        all_have_energy = false;
      }
      if (b.percent) pct_sum += *b.percent;
      ps.batteries.push_back(std::move(b));
    }
  }
  if (!any_adapter && ps.batteries.empty()) return std::nullopt;
  if (ps.batteries.empty()) {
    // Only adapters and ports, no system battery: a desktop whose USB-C ports
    // register with the UCSI or a PD driver (drivers/usb/typec/ucsi/psy.c:
    // type USB, online while a partner supplies power). A port with nothing
    // plugged in is not the machine running from a battery it does not have;
    // what powers it is not told (mains through a supply no driver reports).
    ps.ac_online = any_online ? std::optional<bool>(true) : std::nullopt;
    if (!any_online)
      ps.ac_note = "no system battery and no supply online (USB/PD ports only): mains through a supply the "
                   "power_supply class does not list, never on battery";
  } else if (any_adapter) {
    ps.ac_online = any_online;
  } else {
    // No adapter entry (some USB-C and embedded chargers register none). A
    // charging battery needs a charger: mains. Otherwise a discharging battery
    // means no mains, even next to an idle one (a second battery waits its
    // turn reporting "Full" or "Not charging"). With no battery discharging,
    // "Full" and "Not charging" mean a charger is attached
    // (Documentation/ABI/testing/sysfs-class-power, status; the ACPI battery
    // driver reports "Not charging" when the adapter is on but charging is held
    // back, e.g. by a charge threshold).
    bool charging = false, discharging = false, idle = false;
    for (const auto& b : ps.batteries) {
      charging = charging || b.status == BatteryStatus::Charging;
      discharging = discharging || b.status == BatteryStatus::Discharging;
      idle = idle || b.status == BatteryStatus::Full || b.status == BatteryStatus::NotCharging;
    }
    if (charging) ps.ac_online = true;
    else if (discharging) ps.ac_online = false;
    else if (idle) ps.ac_online = true;
    ps.ac_inferred = ps.ac_online.has_value();
  }
  if (!ps.batteries.empty()) {
    if (all_have_energy && full_wh > 0) {
      ps.battery_percent = 100.0 * now_wh / full_wh;
    } else {
      bool all_pct = true;
      for (const auto& b : ps.batteries) all_pct = all_pct && b.percent.has_value();
      if (all_pct) ps.battery_percent = pct_sum / double(ps.batteries.size());
    }
  }
  return ps;
}

}  // namespace

std::optional<PowerState> read_power_state(const std::string& root) { return read_state(root, true); }

std::optional<PowerState> read_supply_state(const std::string& root) { return read_state(root, false); }

}  // namespace flopwatt::power
