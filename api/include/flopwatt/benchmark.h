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
// Counters: FLOP/s (the loop's FLOP over its wall time; only with
// flop_per_iter), and J/iter, W and FLOP/J of the loop's own headline source,
// judged per loop by flopwatt's headline rule and named in the row's label
// ("energy from <id>"); a loop whose figures are refused gets no energy
// counters and a label saying why, one during a mains/battery change also
// supply_changed = 1. One Meter serves the whole process (meter()); set its
// options before the first benchmark runs with set_meter_options().
#pragma once
#include <benchmark/benchmark.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "flopwatt/meter.h"

namespace flopwatt::gbench {

inline constexpr const char* kFlops = "FLOP/s";
inline constexpr const char* kJPerIter = "J/iter";
inline constexpr const char* kWatts = "W";
inline constexpr const char* kFlopPerJ = "FLOP/J";
inline constexpr const char* kSupplyChanged = "supply_changed";

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

// Sets the counters of one finished loop from its window r (Meter::end over
// the timed loop), as flopwatt judged it: J/iter, W and FLOP/J are those of
// the window's own headline source (r.headline, named in the label), never a
// source chosen for the whole suite before any loop ran, so two rows may name
// two sources. FLOP/s is the loop's FLOP over the window's wall time, whether
// or not the benchmark calls UseRealTime(), so FLOP/J x W = FLOP/s. A loop
// whose figures the rule refused gets no energy counters and a label saying
// why; one during a mains/battery change also supply_changed = 1.
// all_sources adds "<id>:J/iter", "<id>:W" and "<id>:FLOP/J" for every other
// source. flopwatt_bench sets its counters through this same function.
inline void set_counters(::benchmark::State& state, const WindowResult& r, double flop_per_iter,
                         bool all_sources = false) {
  using ::benchmark::Counter;
  const double iters = double(state.iterations());
  if (flop_per_iter > 0 && iters > 0 && r.duration_s > 0)
    state.counters[kFlops] = Counter(flop_per_iter * iters / r.duration_s);
  if (iters <= 0 || r.sources.empty()) return;
  if (r.supply == "changed") {
    state.counters[kSupplyChanged] = Counter(1);
    state.SetLabel("no energy counters: the power supply changed during this loop");
    return;
  }
  std::string label = r.headline ? kLabelSource + *r.headline : "no energy counters: " + r.headline_why;
  for (const auto& s : r.sources) {
    const bool head = r.headline && s.id == *r.headline;
    if (!head && !all_sources) continue;
    const std::string prefix = head ? "" : s.id + ":";
    state.counters[prefix + kJPerIter] = Counter(s.energy_j / iters);
    state.counters[prefix + kWatts] = Counter(s.avg_power_w);
    if (s.flop_per_j) state.counters[prefix + kFlopPerJ] = Counter(*s.flop_per_j);
    if (head && s.low_confidence) label += kLabelLow + s.why_low;
  }
  state.SetLabel(label);
}

// The counters once came from a suite-wide source chosen before any
// loop ran (suite_headline); a loop's figures now come from its own judged
// headline, and suite_headline is not used.
[[deprecated("each loop's counters come from its own judged headline: drop suite_headline")]]
inline void set_counters(::benchmark::State& state, const WindowResult& r, double flop_per_iter,
                         const std::optional<std::string>& /*suite_headline*/, bool all_sources = false) {
  set_counters(state, r, flop_per_iter, all_sources);
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
