#include "harness/bench/energy.h"

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
  const auto figures = meter_->window(t0_, t1, flop_per_iter * iters);
  const auto headline = meter_->headline_source();
  std::string low;
  for (const auto& [id, f] : figures) {
    const bool head = headline && id == *headline;
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
