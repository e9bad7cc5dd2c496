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
  explicit CounterUnwrap(std::uint64_t modulus = 0) : modulus_(modulus) {}

  // Feeds one raw reading; returns units accumulated since the first one.
  double update(std::uint64_t raw);
  double total() const { return total_; }
  std::uint64_t wraps() const { return wraps_; }
  std::uint64_t restarts() const { return restarts_; }

 private:
  std::uint64_t modulus_;
  bool have_prev_ = false;
  std::uint64_t prev_ = 0;
  double total_ = 0;
  std::uint64_t wraps_ = 0;
  std::uint64_t restarts_ = 0;
};

}  // namespace flopwatt::power
