// Advances powercap energy counters in a fixture tree at fixed powers, as
// RAPL does about every millisecond, for end-to-end runs against a root whose
// counters must move (`flopwatt run gemm --sysfs-root DIR`).
// Usage: flopwatt_fake_power ROOT SECONDS ZONE=WATTS[@RESET_S] [...]
//   e.g. flopwatt_fake_power /tmp/fx 30 intel-rapl:0=15 intel-rapl:0:0=9
// With @RESET_S the counter restarts from 0 at RESET_S seconds, as after a
// firmware or driver reset (the counter-reset fixture starts it at 0.9 x max,
// so the reset looks like a wrap to a reader that does not bound the power).
// Each ZONE's energy_uj is replaced atomically (write + rename) and wraps at its
// max_energy_range_uj. Exits after SECONDS.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "power/clock.h"
#include "power/sysfs.h"

using namespace flopwatt::power;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ROOT SECONDS ZONE=WATTS [ZONE=WATTS ...]\n", argv[0]);
    return 2;
  }
  struct Zone {
    std::string path;
    double watts;
    std::uint64_t start, modulus;
    double reset_s;  // < 0: never
  };
  std::vector<Zone> zones;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "bad zone '%s': expected ZONE=WATTS\n", argv[i]);
      return 2;
    }
    const std::string dir = under_root(argv[1], "/sys/class/powercap/" + a.substr(0, eq));
    const auto at = a.find('@', eq);
    Zone z{join_path(dir, "energy_uj"), std::atof(a.c_str() + eq + 1), 0, 0,
           at == std::string::npos ? -1.0 : std::atof(a.c_str() + at + 1)};
    z.start = std::uint64_t(read_int(z.path).value_or(0));
    z.modulus = std::uint64_t(read_int(join_path(dir, "max_energy_range_uj")).value_or(262143328850)) + 1;
    zones.push_back(z);
  }
  const std::int64_t t0 = monotonic_ns();
  const std::int64_t end = t0 + std::int64_t(std::atof(argv[2]) * 1e9);
  while (monotonic_ns() < end) {
    const double s = double(monotonic_ns() - t0) * 1e-9;
    for (const auto& z : zones) {
      const bool after_reset = z.reset_s >= 0 && s >= z.reset_s;
      const std::uint64_t v = after_reset ? std::uint64_t(z.watts * (s - z.reset_s) * 1e6) % z.modulus
                                          : (z.start + std::uint64_t(z.watts * s * 1e6)) % z.modulus;
      const std::string tmp = z.path + ".tmp";
      std::ofstream(tmp) << v << "\n";
      std::rename(tmp.c_str(), z.path.c_str());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(900));
  }
  return 0;
}
