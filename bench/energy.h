// flopwatt's power sampler attached to a Google Benchmark timed loop, in the
// shape of Google Benchmark's MemoryManager hook: start() right before the
// `for (auto _ : state)` loop, stop() right after it. stop() turns the loop's
// [t0, t1] window into user counters. (MemoryManager itself cannot carry
// counters, so the edges are taken inside the benchmark function.)
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <benchmark/benchmark.h>

#include "flopwatt/benchmark.h"

#include "harness/run/energy.h"
#include "power/supply_track.h"

namespace flopwatt::gbench {

// Counter names, documented in the context and docs/api.md: FLOP/s is the FLOP over
// the window's wall time (manual time for simulated rows); the others come from the window.
// They are the public flopwatt/benchmark.h's (kFlops, kJPerIter, kWatts,
// kFlopPerJ in this namespace), so a user's suite and flopwatt_bench compare
// in one report.

struct EnergyOptions {
  bool all_sources = false;  // also "<source id>:J/iter" etc. for every non-headline source
  // Google Benchmark grows the iteration count until a loop lasts
  // --benchmark_min_time and reports only that loop (later repetitions reuse
  // its count). Shorter loops are not reported, so their window is not worth
  // waiting for: a slow gauge makes each window wait for its next sample.
  double skip_below_s = 0;
  // Watches mains/battery (null on a machine without a power supply class). A
  // loop whose window may hold a change gets `supply_changed` = 1 and no
  // energy counters: its source's readings mix two states (a battery that
  // starts charging reports the power going in).
  power::SupplyMonitor* supply = nullptr;
};

class EnergyWindow {
 public:
  // meter may be null or inactive: then only FLOP/s is reported.
  EnergyWindow(EnergyMeter* meter, EnergyOptions o);
  void start();
  // Sets FLOP/s and, with a sampling meter, the energy counters of the
  // headline source. Returns the loop's seconds (start to stop).
  double stop(benchmark::State& st, double flop_per_iter);

  // A simulated device's counters from its modelled energy (joules over every
  // iteration of the loop) and modelled time.
  static void set_modelled(benchmark::State& st, double flop_per_iter, double joules, double seconds,
                           const std::string& source);

 private:
  EnergyMeter* meter_;
  EnergyOptions o_;
  std::map<std::string, std::string> domains_;
  std::int64_t t0_ = 0;
};

}  // namespace flopwatt::gbench
