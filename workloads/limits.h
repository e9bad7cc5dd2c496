// Bounds on numeric input that come from the machine: how much memory it has,
// how many CPUs. A request beyond them is bad input, said before anything is
// allocated or started, not an out-of-memory failure halfway through a run.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/shapes.h"

namespace flopwatt {

// Physical memory (sysconf); 0 when unknown.
std::int64_t physical_memory_bytes();
// Online CPUs (at least 1).
int online_cpus();

// Threads beyond 4x the CPUs only oversubscribe (and tens of thousands exhaust
// the process's stacks); throws InputError naming `flag` with the bound.
void check_thread_count(std::int64_t threads, const std::string& flag);

// Bytes a GEMM run needs at least for one shape: A, B and C in fp32 for
// verification plus the float64-accumulated reference's C (saturates at INT64_MAX).
std::int64_t gemm_shape_bytes(const GemmDesc& d);
// Throws InputError naming `flag` and the shape when one needs more than the
// machine's memory (`memory_bytes`, default physical_memory_bytes()).
void check_shapes_fit_memory(const std::vector<GemmShape>& shapes, const std::string& flag,
                             std::int64_t memory_bytes = physical_memory_bytes());

// "12.3 GiB" for messages.
std::string format_bytes(double bytes);

}  // namespace flopwatt
