// Turns a raw hardware energy counter that wraps (powercap at
// max_energy_range_uj, MSR at 2^32 units) or restarts into a cumulative,
// never decreasing count of units since the first reading.
#pragma once
#include <cstdint>

namespace flopwatt::power {

class CounterUnwrap {
 public:
  // modulus: the counter counts 0 .. modulus-1 and then wraps to 0;
  // 0 means unknown (a decrease is then taken as a restart, never as energy).
  // max_units_per_s: the most the counter can advance per second (the zone's
  // power limit or a plausible bound, in units); 0 = no bound. A step above
  // it, wrap or not, is a reset or a corrupt read, never energy.
  explicit CounterUnwrap(std::uint64_t modulus = 0, double max_units_per_s = 0)
      : modulus_(modulus), max_units_per_s_(max_units_per_s) {}

  // Feeds one raw reading; returns units accumulated since the first one.
  // Without a time the rate bound cannot be applied.
  double update(std::uint64_t raw);
  // t_ns: when raw was read (any monotonic clock).
  double update(std::uint64_t raw, std::int64_t t_ns);
  double total() const { return total_; }
  std::uint64_t wraps() const { return wraps_; }
  std::uint64_t restarts() const { return restarts_; }
  // True when the last update was a restart: the interval before it is a gap
  // whose energy is unknown (the caller drops that sample).
  bool last_was_restart() const { return last_restart_; }
  // The power (units/s) the last rejected step would have implied; 0 if none.
  double last_rejected_rate() const { return last_rejected_rate_; }

 private:
  double step(std::uint64_t raw, double dt_s);
  std::uint64_t modulus_;
  double max_units_per_s_;
  bool have_prev_ = false;
  std::uint64_t prev_ = 0;
  std::int64_t prev_t_ = 0;
  double total_ = 0;
  std::uint64_t wraps_ = 0;
  std::uint64_t restarts_ = 0;
  bool last_restart_ = false;
  double last_rejected_rate_ = 0;
};

}  // namespace flopwatt::power
