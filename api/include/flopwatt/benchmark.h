// flopwatt's energy counters for your own Google Benchmark suite (1.7.1 and
// newer), under the names flopwatt_bench writes, so `flopwatt report A.json
// B.json` reads both:
//
//   #include <benchmark/benchmark.h>
//   #include <flopwatt/benchmark.h>
//
//   static void BM_matmul(benchmark::State& state) {
//     flopwatt::gbench::EnergyCounters energy(state, /*flop_per_iter=*/2.0 * n * n * n);
//     for (auto _ : state) matmul(a, b, c, n);
//   }  // the counters are set when `energy` goes out of scope, or at energy.stop()
//
// Counters: FLOP/s (a rate over the benchmark's time; only with flop_per_iter),
// J/iter, W and FLOP/J of the headline source, chosen per loop by flopwatt's
// headline rule; a loop whose figure is refused gets no energy counters and a
// label saying why. One Meter serves the whole process (meter()); set its
// options before the first benchmark runs with set_meter_options().
#pragma once
#include <benchmark/benchmark.h>

#include <memory>
#include <mutex>
#include <string>

#include "flopwatt/meter.h"

namespace flopwatt::gbench {

inline constexpr const char* kFlops = "FLOP/s";
inline constexpr const char* kJPerIter = "J/iter";
inline constexpr const char* kWatts = "W";
inline constexpr const char* kFlopPerJ = "FLOP/J";

namespace detail {
inline MeterOptions& options() {
  static MeterOptions o;
  return o;
}
}  // namespace detail

// Options of the process's meter; only before the first meter() call.
inline void set_meter_options(const MeterOptions& o) { detail::options() = o; }

// The process's meter, started on first use (the sampler then runs until exit).
inline Meter& meter() {
  static Meter m(detail::options());
  return m;
}

// Sets the counters of one finished loop from its window.
inline void set_counters(::benchmark::State& state, const WindowResult& r, double flop_per_iter) {
  const double iters = double(state.iterations());
  if (flop_per_iter > 0) state.counters[kFlops] = ::benchmark::Counter(flop_per_iter * iters, ::benchmark::Counter::kIsRate);
  if (iters <= 0) return;
  if (!r.headline || !r.energy_j) {
    if (!r.sources.empty()) state.SetLabel("no energy counters: " + r.headline_why);
    return;
  }
  state.counters[kJPerIter] = ::benchmark::Counter(*r.energy_j / iters);
  state.counters[kWatts] = ::benchmark::Counter(r.avg_power_w.value_or(0));
  if (r.flop_per_j) state.counters[kFlopPerJ] = ::benchmark::Counter(*r.flop_per_j);
  for (const auto& s : r.sources)
    if (s.id == *r.headline && s.low_confidence) state.SetLabel("energy low-confidence: " + s.why_low);
}

// Opens a window at construction (right before the timed loop) and closes it
// at stop() or destruction (right after it).
class EnergyCounters {
 public:
  explicit EnergyCounters(::benchmark::State& state, double flop_per_iter = 0, Meter* m = nullptr)
      : state_(state), flop_per_iter_(flop_per_iter), meter_(m ? *m : meter()),
        window_(meter_.begin("benchmark loop")) {}
  EnergyCounters(const EnergyCounters&) = delete;
  EnergyCounters& operator=(const EnergyCounters&) = delete;
  ~EnergyCounters() {
    if (!stopped_) stop();
  }
  WindowResult stop() {
    stopped_ = true;
    WindowResult r = meter_.end(window_, flop_per_iter_ * double(state_.iterations()));
    set_counters(state_, r, flop_per_iter_);
    return r;
  }

 private:
  ::benchmark::State& state_;
  double flop_per_iter_;
  Meter& meter_;
  Meter::Window window_;
  bool stopped_ = false;
};

}  // namespace flopwatt::gbench
