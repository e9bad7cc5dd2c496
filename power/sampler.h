// One background thread samples every source at a fixed period (each no faster
// than its own update rate); the measuring thread asks for the energy of a
// [t0, t1] window afterwards.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "power/source.h"

namespace flopwatt::power {

struct WindowEnergy {
  double j = 0;            // energy over the window (never negative)
  double avg_power_w = 0;  // j / duration
  // The source was gone (its reads failing) for part of the window: nothing
  // was measured there, and nothing is invented for it.
  bool gap = false;
  bool low_confidence = false;
  std::string why_low;     // "window 0.8 s < 3 x 1.0 s update interval", "sampling gap 45 ms"
  std::size_t samples = 0; // samples inside the window
  double covered_s = 0;     // the part of the window the samples cover (power/window_energy.h)
};

struct SourceSamples {
  std::string id;
  std::string unit;
  std::vector<Sample> samples;
};

class Sampler {
 public:
  Sampler(std::vector<std::unique_ptr<PowerSource>> sources, double period_s = 0.010);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void start();
  void stop();  // joins the thread and takes one last sample of every source
  bool running() const;
  double period_s() const;
  static std::int64_t now_ns();  // CLOCK_MONOTONIC, the clock of every sample

  const std::vector<std::unique_ptr<PowerSource>>& sources() const;
  // Energy of each source over [t0_ns, t1_ns]; waits until the sampler has a
  // sample past t1 (or the source's update interval elapsed) before answering,
  // unless `wait` is false: then the window's tail is what has been read so far.
  WindowEnergy energy(const std::string& source_id, std::int64_t t0_ns, std::int64_t t1_ns, bool wait = true);
  // Samples taken since the last drain, per source (for samples.csv, written incrementally).
  std::vector<SourceSamples> drain_samples();
  // Drops every source's samples before t_ns but the last one at or before
  // it (the interpolation of a window starting at t_ns needs it), so a
  // long-lived sampler (a library meter in a days-long training run) does
  // not grow without bound. A window starting before t_ns is then a gap
  // with that reason. Samples not yet drained are dropped too.
  void forget_before(std::int64_t t_ns);
  // Where a source was gone: from its last good read before reads began to
  // fail to the first good read after (to_ns 0: still gone).
  struct Gap {
    std::string id;
    std::int64_t from_ns = 0, to_ns = 0;
    std::string why;
  };
  std::vector<Gap> gaps() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flopwatt::power
