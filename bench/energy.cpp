#include "bench/energy.h"

#include "api/window_result.h"

namespace flopwatt::gbench {

using benchmark::Counter;

EnergyWindow::EnergyWindow(EnergyMeter* meter, EnergyOptions o) : meter_(meter), o_(o) {
  if (meter_) domains_ = source_domains(*meter_);
}

void EnergyWindow::start() { t0_ = EnergyMeter::now_ns(); }

double EnergyWindow::stop(benchmark::State& st, double flop_per_iter) {
  const std::int64_t t1 = EnergyMeter::now_ns();
  // The FLOP of one iteration as it is, for the results store (RecordingReporter): FLOP/s is over
  // the window's wall time, which is not Google Benchmark's time per iteration to the last digit.
  if (flop_per_iter > 0) st.counters["FLOP/iter"] = Counter(flop_per_iter);
  const double seconds = double(t1 - t0_) * 1e-9;
  const double iters = double(st.iterations());
  constexpr double kMaxIterations = 1e9;  // Google Benchmark reports a loop this long whatever its time
  const bool reported = seconds >= o_.skip_below_s || iters >= kMaxIterations;
  if (!meter_ || !meter_->active() || iters <= 0 || !reported) {
    WindowResult timing;  // no energy: FLOP/s over the loop's wall time all the same
    timing.duration_s = seconds;
    set_counters(st, timing, flop_per_iter);
    return seconds;
  }
  // The loop's window judged by the one rule, as `run` judges its rows and
  // the public Meter its windows; the counters as a user's suite gets them.
  const WindowResult r = window_result(*meter_, o_.supply, domains_, {t0_, t1, flop_per_iter * iters, true});
  set_counters(st, r, flop_per_iter, o_.all_sources);
  return seconds;
}

void EnergyWindow::set_modelled(benchmark::State& st, double flop_per_iter, double joules, double seconds,
                                const std::string& source) {
  const double iters = double(st.iterations());
  st.counters[kFlops] = Counter(flop_per_iter * iters, Counter::kIsRate);
  if (flop_per_iter > 0) st.counters["FLOP/iter"] = Counter(flop_per_iter);
  if (iters <= 0 || joules <= 0) return;
  st.counters[kJPerIter] = Counter(joules / iters);
  if (seconds > 0) st.counters[kWatts] = Counter(joules / seconds);
  st.counters[kFlopPerJ] = Counter(flop_per_iter * iters / joules);
  st.SetLabel(kLabelSource + source + "; simulated: time and energy modelled");
}

}  // namespace flopwatt::gbench
