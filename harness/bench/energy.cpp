#include "harness/bench/energy.h"

#include <algorithm>

namespace flopwatt::gbench {

using benchmark::Counter;

void EnergyWindow::start() { t0_ = EnergyMeter::now_ns(); }

void EnergyWindow::stop(benchmark::State& st, double flop_per_iter) {
  const std::int64_t t1 = EnergyMeter::now_ns();
  const double iters = double(st.iterations());
  st.counters[kFlops] = Counter(flop_per_iter * iters, Counter::kIsRate);
  if (!meter_ || !meter_->active() || iters <= 0) return;
  constexpr double kMaxIterations = 1e9;  // Google Benchmark reports a loop this long whatever its time
  if (double(t1 - t0_) * 1e-9 < o_.skip_below_s && iters < kMaxIterations) return;
  std::optional<power::SupplyTrack> track;
  if (o_.supply) {
    o_.supply->poll_now();  // after t1, outside the loop: the window's end is covered
    track = o_.supply->track();
    if (track->changed_during(t0_, t1)) {
      st.counters[kSupplyChanged] = Counter(1);
      st.SetLabel("power supply changed during this loop: no energy counters");
      return;
    }
  }
  auto figures = meter_->window(t0_, t1, flop_per_iter * iters);
  std::vector<std::string> discounted;
  if (track) discounted = discount_non_discharging_batteries(figures, *meter_, *track, t0_, t1);
  const auto headline = meter_->headline_source();
  std::string low;
  for (const auto& [id, f] : figures) {
    const bool head = headline && id == *headline;
    if (!head && !o_.all_sources) continue;
    // A battery that was not discharging (plugged in before this loop) reads the
    // power going into it: as the headline it gives no energy counters at all;
    // beside it, its W and J/iter stay (what it read) without FLOP/J.
    if (head && std::find(discounted.begin(), discounted.end(), id) != discounted.end()) {
      st.counters[kSupplyChanged] = Counter(1);
      low = f.why_low;
      continue;
    }
    const std::string p = head ? "" : id + ":";
    st.counters[p + kJPerIter] = Counter(f.j / iters);
    st.counters[p + kWatts] = Counter(f.avg_power_w);
    if (f.flop_per_j) st.counters[p + kFlopPerJ] = Counter(*f.flop_per_j);
    if (head && f.confidence == "low") low = f.why_low;
  }
  // A counter cannot carry text; the label is the only per-benchmark string
  // the console, JSON and CSV reporters all print.
  if (!low.empty()) st.SetLabel("energy low-confidence: " + low);
}

void EnergyWindow::set_modelled(benchmark::State& st, double flop_per_iter, double joules, double seconds,
                                const std::string& source) {
  const double iters = double(st.iterations());
  st.counters[kFlops] = Counter(flop_per_iter * iters, Counter::kIsRate);
  if (iters <= 0 || joules <= 0) return;
  st.counters[kJPerIter] = Counter(joules / iters);
  if (seconds > 0) st.counters[kWatts] = Counter(joules / seconds);
  st.counters[kFlopPerJ] = Counter(flop_per_iter * iters / joules);
  st.SetLabel("simulated: time and energy modelled (" + source + ")");
}

}  // namespace flopwatt::gbench
