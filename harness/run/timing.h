// The repetition loop of the measurement method: warm-up, then repeat until
// both a minimum count and a minimum time are reached, keeping every repetition.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

namespace flopwatt {

struct TimingOptions {
  double min_time_s = 0.2;
  int min_reps = 5;
  int warmup_reps = 1;
  double max_time_s = 120.0;  // safety net for very slow configurations
  int max_reps = 1000000;
};

struct Timed {
  std::vector<double> rep_s;      // every timed repetition
  std::int64_t t0_ns = 0, t1_ns = 0;  // CLOCK_MONOTONIC edges of the timed loop (energy window)
};

// body(rep) runs one repetition; rep counts from 0 over warm-up and timed reps.
// Returns early (possibly with no reps) when interrupted. before_timed, when
// given, runs after the warm-up and before t0 is read, so a window opened
// there (hardware counters) holds the whole timed loop and its cost is in no
// repetition.
Timed time_repeated(const TimingOptions& o, const std::function<void(int)>& body,
                    const std::function<void()>& before_timed = {});
std::int64_t monotonic_ns();

// Set by SIGINT/SIGTERM; the repetition loop stops at the next repetition and
// callers drop the unfinished measurement, keeping everything before it.
extern std::atomic<bool> g_interrupted;

}  // namespace flopwatt
