#include "power/source_watch.h"

#include <chrono>
#include <thread>

#include "power/sampler.h"

namespace flopwatt::power {

std::map<std::string, SourceWatch> watch_sources(std::vector<std::unique_ptr<PowerSource>> sources,
                                                 double seconds, double period_s) {
  std::map<std::string, SourceWatch> watched;
  if (sources.empty()) return watched;
  Sampler sampler(std::move(sources), period_s);
  sampler.start();
  // Let the first reads land so the window opens on samples, not before them.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::int64_t t0 = Sampler::now_ns();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const std::int64_t t1 = Sampler::now_ns();
  sampler.stop();
  for (const auto& s : sampler.sources()) {
    SourceWatch w;
    w.interval_measured = s->interval_measured();
    w.interval_s = s->update_interval_s();
    const WindowEnergy e = sampler.energy(s->id(), t0, t1);
    w.avg_power_w = e.avg_power_w;
    w.sampled = e.samples > 0;
    // A counter that moved has energy; a gauge's value moving shows as a measured interval.
    w.changed = w.interval_measured || (s->kind() == Kind::Counter && e.j > 0);
    w.error = s->last_error();
    watched[s->id()] = w;
  }
  return watched;
}

}  // namespace flopwatt::power
