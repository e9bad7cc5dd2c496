// A small program over the power library for tests that must run in another
// process: under umockdev-run (the real absolute /sys paths, libsensors) and
// as an unprivileged user. Prints one tab-separated record per line:
//   status <id> <available 0|1> <domain> <kind> <reason> <fix> <note>
//   window <id> <avg W> <update interval s> <measured 0|1> <low 0|1>
//   state  <ac_online 1|0|?> <battery percent or ?>
//   temp   <id> <degC>
// Usage: flopwatt_power_probe [--root DIR] [--measure SECONDS] [--power-log FILE]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "power/power_state.h"
#include "power/sampler.h"
#include "power/source.h"
#include "power/temperature.h"

using namespace flopwatt::power;

int main(int argc, char** argv) {
  DiscoverOptions o;
  double measure = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--root")) o.root = argv[i + 1];
    else if (!std::strcmp(argv[i], "--measure")) measure = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--power-log")) o.power_log = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  Discovery d = discover(o);
  for (const auto& s : d.status)
    std::printf("status\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.id.c_str(), int(s.available), s.domain.c_str(),
                to_string(s.kind), s.reason.c_str(), s.fix.c_str(), s.note.c_str());
  if (measure > 0 && !d.sources.empty()) {
    Sampler sampler(std::move(d.sources), 0.01);
    sampler.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // open the window on samples
    const auto t0 = Sampler::now_ns();
    std::this_thread::sleep_for(std::chrono::duration<double>(measure));
    const auto t1 = Sampler::now_ns();
    for (const auto& s : sampler.sources()) {
      const WindowEnergy w = sampler.energy(s->id(), t0, t1);
      std::printf("window\t%s\t%.6f\t%.6f\t%d\t%d\n", s->id().c_str(), w.avg_power_w, s->update_interval_s(),
                  int(s->interval_measured()), int(w.low_confidence));
    }
    sampler.stop();
  }
  if (auto ps = read_power_state(o.root.empty() ? "/" : o.root)) {
    std::printf("state\t%s\t", ps->ac_online ? (*ps->ac_online ? "1" : "0") : "?");
    if (ps->battery_percent) std::printf("%.1f\n", *ps->battery_percent);
    else std::printf("?\n");
  }
  for (const auto& t : read_temperatures(o.root.empty() ? "/" : o.root))
    std::printf("temp\t%s\t%.3f\n", t.id.c_str(), t.celsius);
  return 0;
}
