// This machine's arithmetic peak, measured: short SIMD throughput loops with
// enough independent accumulators to hide instruction latency, on 1..N OpenMP
// threads. It is the denominator of "fraction of peak" in reports.
#pragma once
#include <chrono>
#include <string>
#include <vector>

namespace flopwatt::cpu {

struct PeakResult {
  std::string dtype;      // "fp32" | "bf16"
  int threads = 0;        // threads that ran; 0 for a row that says why an ISA was not measured
  double flop_per_s = 0;  // 0 when not measured (see note)
  std::string isa;        // "avx512f" | "avx2" | "avx512bf16" | "amx-bf16"
  std::string note;       // empty when measured; otherwise why not and the fix
};

// fp32 FMA (AVX-512, else AVX2, chosen at run time), then bf16 with AVX512-BF16
// (vdpbf16ps) and AMX (TDPBF16PS), each for threads = 1..omp_get_max_threads(),
// about `seconds_per_point` each; a point's rate is the best aggregate
// throughput over any 4 ms window of that time (robust to other processes;
// see peak.cpp). ISAs this CPU or kernel lacks yield one row
// with threads = 0, flop_per_s = 0 and the reason in `note`; nothing throws.
// FLOP counts: FMA 2 per lane; vdpbf16ps 4 per fp32 lane (two products, two
// adds); TDPBF16PS on a 16x16 fp32 tile with K = 32 bf16: 16*16*32*2.
std::vector<PeakResult> measure_peak(double seconds_per_point);

// One call of a throughput kernel: works until `deadline` and returns the work
// it did (FLOPs, exps, ...).
using ThroughputKernel = double (*)(std::chrono::steady_clock::time_point deadline);
// The rate of `kernel` on `threads` OpenMP threads together, measured as each
// point of measure_peak is: every thread calls it back to back for about
// `seconds`, and the rate is the best aggregate over any 4 ms window (see
// peak.cpp). *ran, when given, gets the number of threads that ran. 0 when
// threads < 1 or seconds <= 0.
double best_throughput(ThroughputKernel kernel, int threads, double seconds, int* ran = nullptr);

}  // namespace flopwatt::cpu
