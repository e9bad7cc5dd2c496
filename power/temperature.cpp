#include "power/temperature.h"

#include "power/hwmon.h"
#include "power/sysfs.h"

namespace flopwatt::power {

std::vector<Temperature> read_temperatures(const std::string& root) {
  std::vector<Temperature> out;
  std::vector<HwmonChannel> chans;
  if (root.empty() || root == "/") {
    std::string problem;
    chans = scan_hwmon_libsensors(&problem);
    if (!problem.empty()) chans = scan_hwmon_sysfs(root);
  } else {
    chans = scan_hwmon_sysfs(root);
  }
  for (const auto& c : chans) {
    if (c.type != HwmonChannel::Type::Temp) continue;
    if (auto v = read_hwmon_channel(c)) out.push_back({"hwmon:" + c.chip + ":" + c.label, *v});
  }
  // Thermal zones: what the kernel's thermal governor acts on (x86_pkg_temp, acpitz).
  const std::string base = under_root(root, "/sys/class/thermal");
  for (const auto& n : list_dir(base)) {
    if (n.rfind("thermal_zone", 0) != 0) continue;
    const std::string dir = join_path(base, n);
    auto t = read_int(join_path(dir, "temp"));
    if (!t) continue;  // some zones refuse reads while their sensor sleeps
    const std::string type = read_trimmed(join_path(dir, "type")).value_or(n);
    out.push_back({"thermal:" + n + ":" + type, double(*t) * 1e-3});
  }
  return out;
}

}  // namespace flopwatt::power
