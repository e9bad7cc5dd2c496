// This machine's memory ceilings, measured: read, write, copy and triad streams,
// and the stream patterns of the training step's memory-bound ops, over a
// working set sized for each level of the cache hierarchy (L1, L2, LLC, DRAM,
// from the kernel's cache topology), on 1..N OpenMP threads. A kernel's rate
// depends on how many streams it reads, how many it rewrites in place (no
// write-allocate read) and whether its stores bypass the cache, so one stream
// does not bound another (likwid-bench measures each pattern for the same
// reason). Each stream checks the data it moved, and each point is timed like
// any measurement: repetitions, median and spread. With the SIMD peak
// (cpu/peak.h) these are the ceilings of a roofline.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
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

// Read, Write, Copy and Triad are STREAM's (triad: a = b + 3c). The others are
// named by their streams: rN read-only, uN read and rewritten in place, h1 a
// bf16 array written; the op each bounds is in workloads/gpt2/op_table.cpp.
//   update  u1         softmax/cross-entropy backward (in place)
//   r1u1    r1 u1      GELU backward (d *= g(x)), embedding backward
//   r2u1    r2 u1      LayerNorm backward accumulating into dx
//   r1u3    r1 u3      AdamW (g read; p, m, v rewritten)
//   r1u3h1  r1 u3 h1   AdamW with the bf16 copy of the parameters
// The _nt streams are write, copy and triad with non-temporal stores.
enum class Stream { Read, Write, Copy, Triad, Update, R1U1, R2U1, R1U3, R1U3H1, WriteNt, CopyNt, TriadNt };
// Every stream, in the order `run peak` measures them; the _nt ones only where
// this build has a non-temporal store (x86 SSE and up).
std::vector<Stream> all_streams();
const char* stream_name(Stream s);
// Bytes one pass moves per element, the STREAM convention (write-allocate
// traffic is not counted): 4 per float read or written, 8 per float rewritten
// in place, 2 per bf16 written; read 4, write 4, copy 8, triad 12, r1u3 28.
int stream_bytes_per_element(Stream s);
// Bytes the stream's arrays hold per element (its working set).
int stream_footprint_per_element(Stream s);

// The arrays of one thread's stream, n elements each: a always; b, c, d (fp32)
// and h (bf16 bits) only for the streams that use them (the others stay empty,
// so a DRAM-sized read allocates one array, not five).
// Arrays of 2 MiB and more are 2 MiB aligned and advised for transparent huge
// pages, as the GPT-2 arenas are (workloads/gpt2/model.cpp): the ceiling is
// measured on the memory the kernels stream, and 4 KiB pages cost a TLB miss
// per page (a nested page walk in a virtual machine) that huge pages do not.
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(std::size_t n);
  void deallocate(T* p, std::size_t) { std::free(p); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const { return true; }
};
template <typename T>
using StreamArray = std::vector<T, HugePageAllocator<T>>;

struct StreamBuffers {
  StreamArray<float> a, b, c, d;
  StreamArray<std::uint16_t> h;
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
  std::string stream;         // stream_name()
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
// The cache a level's name stands for, as the bytes all `threads` threads
// together can keep there: a private cache's size times the threads, a shared
// one's size times the caches the threads spread over. The roofline picks an
// op's level by it (the smallest that holds the op's bytes). DRAM is unbounded
// and not listed.
struct LevelCapacity {
  std::string level;  // "L1", "L2", "LLC", as in WorkingSet
  std::size_t bytes = 0;
};
std::vector<LevelCapacity> level_capacities(const std::vector<CacheLevel>& caches, int threads);

// Every stream x level x thread count 1..omp_get_max_threads().
std::vector<BandwidthPoint> measure_bandwidth(double seconds_per_point, const std::string& root = "/");

}  // namespace flopwatt::cpu
