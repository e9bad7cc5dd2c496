// Meter options whose power is known: an external meter's log at a constant
// power (the "t_seconds,watts" lines of power/external_log.h, on the realtime
// clock) from 5 s ago to a minute ahead, on a fixture laptop tree.
#pragma once
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include "flopwatt/meter.h"

namespace flopwatt::testing {

inline MeterOptions at_constant_watts(const std::filesystem::path& dir, double watts,
                                      const std::string& fixture = "laptop") {
  const std::filesystem::path log = dir / "meter.log";
  std::ofstream f(log);
  f << "# clock: realtime\n";
  const double now = double(std::time(nullptr));
  for (double t = now - 5; t < now + 60; t += 0.1) f << std::fixed << t << "," << watts << "\n";
  MeterOptions o;
  o.power_log = log.string();
  o.sysfs_root = std::string(FLOPWATT_TEST_FIXTURES) + "/power/" + fixture;
  return o;
}

}  // namespace flopwatt::testing
