#include "power/counter_unwrap.h"

namespace flopwatt::power {

double CounterUnwrap::update(std::uint64_t raw) { return step(raw, -1); }

double CounterUnwrap::update(std::uint64_t raw, std::int64_t t_ns) {
  const double dt = have_prev_ ? double(t_ns - prev_t_) * 1e-9 : -1;
  prev_t_ = t_ns;
  return step(raw, dt);
}

double CounterUnwrap::step(std::uint64_t raw, double dt_s) {
  last_restart_ = false;
  last_rejected_rate_ = 0;
  if (!have_prev_) {
    have_prev_ = true;
    prev_ = raw;
    return total_;
  }
  // A step the hardware cannot have made in dt_s: more energy than the zone
  // could draw at its bound over that interval. Counters advance in steps
  // (RAPL about every 1 ms) and reads jitter, so two reads microseconds apart
  // can straddle a whole update: the interval is taken as at least
  // kMinBoundS, which still leaves a reset from high in a 32-bit or powercap
  // range (tens of kJ) far above the bound.
  constexpr double kMinBoundS = 0.25;
  auto impossible = [&](double delta) {
    if (max_units_per_s_ <= 0 || dt_s < 0) return false;
    const double dt = dt_s < kMinBoundS ? kMinBoundS : dt_s;
    if (delta <= max_units_per_s_ * dt) return false;
    last_rejected_rate_ = delta / dt;
    return true;
  };
  auto restart = [&] {
    ++restarts_;
    last_restart_ = true;
  };
  if (raw >= prev_) {
    if (impossible(double(raw - prev_)))
      restart();
    else
      total_ += double(raw - prev_);
  } else if (modulus_ > 0 && prev_ < modulus_) {
    // We sample every few milliseconds and a counter takes minutes to wrap, so
    // a true wrap moves only a small fraction of the range. A "wrapped" delta
    // of more than half the range, or one implying more power than the bound,
    // is a counter that restarted (driver reload, VM migration, firmware
    // reset): counting it would add phantom energy.
    const std::uint64_t delta = modulus_ - prev_ + raw;
    if (delta <= modulus_ / 2 && !impossible(double(delta))) {
      total_ += double(delta);
      ++wraps_;
    } else {
      restart();
    }
  } else {
    restart();
  }
  prev_ = raw;
  return total_;
}

}  // namespace flopwatt::power
