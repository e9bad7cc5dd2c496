// The libsensors access path for hwmon (the real root only: libsensors reads /sys itself).
#include <sensors/error.h>
#include <sensors/sensors.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "power/hwmon.h"
#include "power/sysfs.h"

namespace flopwatt::power {

namespace {

// libsensors keeps global state and is not thread-safe; every call goes through this lock.
std::mutex& lib_mutex() {
  static std::mutex m;
  return m;
}

// Initialises once per process with the system configuration (labels,
// compute statements); a broken configuration falls back to none.
const std::string& init_problem() {
  static const std::string problem = [] {
    int rc = sensors_init(nullptr);
    if (rc == 0) return std::string();
    std::string first = sensors_strerror(rc);
    sensors_cleanup();
    if (FILE* empty = std::tmpfile()) {
      rc = sensors_init(empty);
      std::fclose(empty);
      if (rc == 0) return std::string();
    }
    return "sensors_init failed: " + first;
  }();
  return problem;
}

}  // namespace

bool sensors_read_value(const void* chip_handle, int subfeature, double& value) {
  std::lock_guard<std::mutex> g(lib_mutex());
  return sensors_get_value(static_cast<const sensors_chip_name*>(chip_handle), subfeature, &value) == 0;
}

std::vector<HwmonChannel> scan_hwmon_libsensors(std::string* problem) {
  std::lock_guard<std::mutex> g(lib_mutex());
  std::vector<HwmonChannel> out;
  if (!init_problem().empty()) {
    if (problem) *problem = init_problem();
    return out;
  }
  if (problem) problem->clear();
  std::vector<const sensors_chip_name*> chips;
  int nr = 0;
  while (const sensors_chip_name* c = sensors_get_detected_chips(nullptr, &nr)) chips.push_back(c);
  // Enumeration follows readdir order; sort by hwmon directory so ids are stable.
  auto base = [](const sensors_chip_name* c) {
    std::string p = c->path ? c->path : "";
    return p.substr(p.rfind('/') + 1);
  };
  std::stable_sort(chips.begin(), chips.end(),
                   [&](const sensors_chip_name* a, const sensors_chip_name* b) { return natural_less(base(a), base(b)); });
  std::map<std::string, int> seen;
  for (const sensors_chip_name* chip : chips) {
    const std::string prefix = chip->prefix ? chip->prefix : "unknown";
    const int k = seen[prefix]++;
    const std::string name = k == 0 ? prefix : prefix + "-" + std::to_string(k);
    const std::string dir = chip->path ? chip->path : "";
    double interval = 0;
    if (auto ui = read_int(join_path(dir, "update_interval")); ui && *ui > 0) interval = double(*ui) * 1e-3;
    int fnr = 0;
    while (const sensors_feature* f = sensors_get_features(chip, &fnr)) {
      const sensors_subfeature* sf = nullptr;
      HwmonChannel c;
      if (f->type == SENSORS_FEATURE_POWER) {
        sf = sensors_get_subfeature(chip, f, SENSORS_SUBFEATURE_POWER_INPUT);
        if (!sf) sf = sensors_get_subfeature(chip, f, SENSORS_SUBFEATURE_POWER_AVERAGE);
        c.type = HwmonChannel::Type::Power;
      } else if (f->type == SENSORS_FEATURE_ENERGY) {
        sf = sensors_get_subfeature(chip, f, SENSORS_SUBFEATURE_ENERGY_INPUT);
        c.type = HwmonChannel::Type::Energy;
      } else if (f->type == SENSORS_FEATURE_TEMP) {
        sf = sensors_get_subfeature(chip, f, SENSORS_SUBFEATURE_TEMP_INPUT);
        c.type = HwmonChannel::Type::Temp;
      }
      if (!sf || !(sf->flags & SENSORS_MODE_R)) continue;
      char* label = sensors_get_label(chip, f);
      c.label = label ? label : f->name;
      std::free(label);
      c.chip = name;
      c.channel = f->name;
      c.hwmon_dir = dir;
      c.update_interval_s = interval;
      c.chip_handle = chip;
      c.subfeature = sf->number;
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace flopwatt::power
