// This machine's memory ceilings, measured: read, write, copy and triad streams
// over a working set sized for each level of the cache hierarchy (L1, L2, LLC,
// DRAM, from the kernel's cache topology), on 1..N OpenMP threads. Each stream
// checks the data it moved, and each point is timed like any measurement:
// repetitions, median and spread. With the SIMD peak (cpu/peak.h) these are
// the ceilings of a roofline.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace flopwatt::cpu {

// One cache of cpu0, as /sys/devices/system/cpu/cpu0/cache/index*/ describes it
// (Documentation/ABI/testing/sysfs-devices-system-cpu): level, type (Data,
// Instruction, Unified), size and how many CPUs share it.
struct CacheLevel {
  int level = 0;
  std::string type;
  std::size_t bytes = 0;
  int shared_by = 1;
  std::string source;  // "sysfs" or "sysconf" (the C library's CPUID reading)
};
// Data and unified caches of cpu0 below `root` ("/" or a fixture tree), by level.
// Some virtual machines expose no cache directory in sysfs; for the real root
// the C library's sysconf(_SC_LEVEL*_CACHE_SIZE) (read from CPUID) stands in.
// Empty when neither knows (then working_sets() falls back, and says so).
std::vector<CacheLevel> cache_topology(const std::string& root = "/");

struct WorkingSet {
  std::string level;         // "L1", "L2", "LLC", "DRAM"
  std::size_t bytes = 0;     // per thread, all arrays of a stream together
  std::string basis;         // how the size was chosen
};
// Per-thread working sets: half of L1d, half of L2, half of the LLC's share per
// thread at `threads` threads, and 4x the LLC for DRAM, at least 64 MiB and at
// most 1 GiB per thread (a hypervisor can report a host's whole LLC; the cap
// keeps `run peak` short and is stated in `basis`). A level the topology lacks
// is left out; with no topology at all, DRAM only.
std::vector<WorkingSet> working_sets(const std::vector<CacheLevel>& caches, int threads);

enum class Stream { Read, Write, Copy, Triad };
const char* stream_name(Stream s);
// Bytes one pass moves per float element, the STREAM convention (write-allocate
// traffic is not counted): read 4, write 4, copy 8, triad 12.
int stream_bytes_per_element(Stream s);

// The arrays of one thread's stream, n floats each: a always, b for copy and
// triad, c for triad (the others stay empty, so a DRAM-sized read allocates one
// array, not three).
struct StreamBuffers {
  std::vector<float> a, b, c;
  StreamBuffers(std::size_t n, Stream s);
};
// One pass of the stream over the buffers; pass number `pass` sets the value a
// write pass stores, so a pass that did not run is caught. Returns the read sum
// (Read) or 0.
double run_stream_pass(Stream s, StreamBuffers& buf, int pass);
// Whether the buffers hold what `passes` passes of the stream must leave (and,
// for Read, whether `read_sum` is the exact sum of a).
bool check_stream(Stream s, const StreamBuffers& buf, int passes, double read_sum);

struct BandwidthPoint {
  std::string stream;         // "read" | "write" | "copy" | "triad"
  std::string level;          // working-set level
  std::size_t bytes_per_thread = 0;
  int threads = 0;
  int reps = 0;
  double median_bytes_per_s = 0, p10_bytes_per_s = 0, p90_bytes_per_s = 0;  // aggregate over threads
  double bytes_per_rep = 0;        // all threads together, the STREAM count
  std::vector<double> rep_seconds;  // every repetition's time, kept
  bool verified = false;
  std::string note;           // empty when measured and verified
};
// One point: every thread runs its own buffers; a repetition is one pass of all
// threads between barriers (several passes for sets too small to time alone),
// repeated for at least `min_time_s` and 5 repetitions.
BandwidthPoint measure_stream(Stream s, const WorkingSet& ws, int threads, double min_time_s);
// Every stream x level x thread count 1..omp_get_max_threads().
std::vector<BandwidthPoint> measure_bandwidth(double seconds_per_point, const std::string& root = "/");

}  // namespace flopwatt::cpu
