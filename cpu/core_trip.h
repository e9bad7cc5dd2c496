// How far apart the cores running this process's OpenMP threads 0 and 1 sit:
// the time one cache line takes from one to the other and back. Tens of ns
// when they share a cache, hundreds across chiplets or sockets. On a virtual
// machine it changes as the hypervisor moves the vCPUs, and with it DRAM
// bandwidth and what data written on one core costs the other (docs/performance.md,
// "What a roof does not see"), so a run records it beside its figures.
#pragma once
#include <optional>

namespace flopwatt::cpu {

// The median over `rounds` of the mean round trip in a round of `trips`
// round trips, in ns. nullopt with fewer than 2 threads, or when fewer than
// half the rounds finished within budget_s each (a descheduled thread: the
// figure would be the scheduler's, not the cores').
std::optional<double> core_round_trip_ns(int threads, int rounds = 5, int trips = 2000, double budget_s = 0.05);

}  // namespace flopwatt::cpu
