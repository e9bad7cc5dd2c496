// The one clock of every power sample.
#pragma once
#include <cstdint>

namespace flopwatt::power {

std::int64_t monotonic_ns();  // CLOCK_MONOTONIC
std::int64_t realtime_ns();   // CLOCK_REALTIME, only to align external logs

}  // namespace flopwatt::power
