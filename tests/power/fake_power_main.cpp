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
//
// Real counters are advanced by the hardware whatever the CPUs are doing, so a
// reader's window sees the energy of its own time span. A writer that the
// scheduler delays leaves stale values exactly while the measured code runs and
// catches up in the gaps, moving energy between windows. The writer therefore
// asks for a real-time priority (SCHED_FIFO, root or CAP_SYS_NICE) and says so
// on stderr when it cannot have it.
#include <sched.h>
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
  // FLOPWATT_FAKE_POWER_ORDINARY=1 keeps it an ordinary process: beside
  // `flopwatt serve` and Prometheus the real-time writer went with a serve that
  // did not start for 10 s and rates 10% off (3 of 4 runs; 0 of 2 without it).
  sched_param prio{};
  prio.sched_priority = sched_get_priority_min(SCHED_FIFO) + 1;
  if (std::getenv("FLOPWATT_FAKE_POWER_ORDINARY")) std::fprintf(stderr, "flopwatt_fake_power: ordinary priority, as asked\n");
  else if (sched_setscheduler(0, SCHED_FIFO, &prio) != 0)
    std::perror("flopwatt_fake_power: no real-time priority; counters lag when the CPUs are busy");
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
