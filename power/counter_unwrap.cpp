#include "power/counter_unwrap.h"

namespace flopwatt::power {

double CounterUnwrap::update(std::uint64_t raw) {
  if (!have_prev_) {
    have_prev_ = true;
    prev_ = raw;
    return total_;
  }
  if (raw >= prev_) {
    total_ += double(raw - prev_);
  } else if (modulus_ > 0 && prev_ < modulus_) {
    // We sample every few milliseconds and a counter takes minutes to wrap, so
    // a true wrap moves only a small fraction of the range. A "wrapped" delta
    // of more than half the range is a counter that restarted (driver reload,
    // VM migration): counting it would add a phantom half-range of energy.
    const std::uint64_t delta = modulus_ - prev_ + raw;
    if (delta <= modulus_ / 2) {
      total_ += double(delta);
      ++wraps_;
    } else {
      ++restarts_;
    }
  } else {
    ++restarts_;
  }
  prev_ = raw;
  return total_;
}

}  // namespace flopwatt::power
