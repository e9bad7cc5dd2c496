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
  // The loop's window judged by the one rule, as `run` judges its rows.
  Measurement m;
  m.energy = meter_->window(t0_, t1, flop_per_iter * iters);
  judge_window(m, *meter_, track ? &*track : nullptr, t0_, t1);
  const auto& headline = m.headline_source;
  std::string low;
  // The run's headline source refused for this loop (a battery plugged in
  // before it, a counter that stopped): no unprefixed energy counters at all,
  // and the label says why.
  if (const auto run_head = meter_->headline_source(); run_head && headline != run_head && m.energy.count(*run_head)) {
    low = m.energy.at(*run_head).why_low;
    for (const auto& s : meter_->status())  // a battery refused: its state is not what the loop began with
      if (s.id == *run_head && s.domain == "battery") st.counters[kSupplyChanged] = Counter(1);
  }
  for (const auto& [id, f] : m.energy) {
    const bool head = headline && id == *headline && headline == meter_->headline_source();
    if (!head && !o_.all_sources) continue;
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
