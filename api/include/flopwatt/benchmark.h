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
// J/iter, W and FLOP/J of the meter's headline source, judged per loop by
// flopwatt's headline rule; a loop whose figure is refused gets no energy
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

// Sets the counters of one finished loop from its window. The plain energy
// counters (J/iter, W, FLOP/J) are the headline source's, and only when that
// is the suite's headline source (suite_headline: the meter's headline_source();
// none given: the window's own), so no two rows of a suite come from two
// sources. A loop that may hold a mains/battery change, or that ran on the
// suite's battery after it stopped discharging, gets supply_changed = 1 and no
// energy counters; any other refused loop gets none and a label saying why.
// all_sources adds "<id>:J/iter", "<id>:W" and "<id>:FLOP/J" for every other
// source. flopwatt_bench sets its counters through this same function.
inline void set_counters(::benchmark::State& state, const WindowResult& r, double flop_per_iter,
                         const std::optional<std::string>& suite_headline = std::nullopt, bool all_sources = false) {
  using ::benchmark::Counter;
  const double iters = double(state.iterations());
  if (flop_per_iter > 0) state.counters[kFlops] = Counter(flop_per_iter * iters, Counter::kIsRate);
  if (iters <= 0 || r.sources.empty()) return;
  if (r.supply == "changed") {
    state.counters[kSupplyChanged] = Counter(1);
    state.SetLabel("power supply changed during this loop: no energy counters");
    return;
  }
  const std::string want = suite_headline ? *suite_headline : r.headline.value_or("");
  const bool plain = r.headline && *r.headline == want;
  std::string label;
  for (const auto& s : r.sources) {
    const bool head = plain && s.id == want;
    if (!plain && s.id == want) {  // the suite's source, refused for this loop
      label = "no energy counters: " + (s.why_low.empty() ? r.headline_why : s.why_low);
      if (s.domain == "battery") state.counters[kSupplyChanged] = Counter(1);
    }
    if (!head && !all_sources) continue;
    const std::string prefix = head ? "" : s.id + ":";
    state.counters[prefix + kJPerIter] = Counter(s.energy_j / iters);
    state.counters[prefix + kWatts] = Counter(s.avg_power_w);
    if (s.flop_per_j) state.counters[prefix + kFlopPerJ] = Counter(*s.flop_per_j);
    if (head && s.low_confidence) label = "energy low-confidence: " + s.why_low;
  }
  if (!plain && label.empty()) label = "no energy counters: " + r.headline_why;
  if (!label.empty()) state.SetLabel(label);
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
    set_counters(state_, r, flop_per_iter_, meter_.headline_source());
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
