#include "cpu/peak.h"

#include <immintrin.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>

#include "workloads/dtype.h"

// Only the kernels below carry target attributes; everything else in the binary
// keeps the baseline ISA when FLOPWATT_NATIVE is off, and each kernel runs only
// after a run-time check that the CPU (and for AMX the kernel) allows it.

namespace flopwatt::cpu {
namespace {

using Clock = std::chrono::steady_clock;

// Results are summed into this so the compiler cannot drop the loops.
volatile float g_sink = 0.0f;

// Inner repetitions between clock reads: ~10^4-10^5 cycles, so the clock costs < 1%.
constexpr int kReps = 2048;

// Horizontal sum through memory: g++ 12's _mm512_reduce_add_ps trips -Wuninitialized.
__attribute__((target("avx512f"))) float sum_lanes(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float t = 0;
  for (float x : lanes) t += x;
  return t;
}

// acc = acc * x + y with x just below 1 converges (to y / (1 - x)): no overflow,
// no denormals, and nothing for the compiler to fold without -ffast-math.
__attribute__((target("avx512f,fma"))) double fp32_avx512(Clock::time_point deadline) {
  constexpr int kAcc = 16;  // FMA latency 4 x 2 ports = 8 in flight; 16 leaves margin
  __m512 acc[kAcc];
  for (int a = 0; a < kAcc; ++a) acc[a] = _mm512_set1_ps(0.001f * float(a));
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-6f);
  std::uint64_t iters = 0;
  do {
    for (int r = 0; r < kReps; ++r) {
#pragma GCC unroll 16
      for (int a = 0; a < kAcc; ++a) acc[a] = _mm512_fmadd_ps(acc[a], x, y);
    }
    iters += kReps;
  } while (Clock::now() < deadline);
  __m512 s = acc[0];
  for (int a = 1; a < kAcc; ++a) s = _mm512_add_ps(s, acc[a]);
  g_sink = g_sink + sum_lanes(s);
  return double(iters) * kAcc * 16 * 2;
}

__attribute__((target("avx2,fma"))) double fp32_avx2(Clock::time_point deadline) {
  constexpr int kAcc = 12;  // 16 ymm registers: 12 accumulators + 2 constants
  __m256 acc[kAcc];
  for (int a = 0; a < kAcc; ++a) acc[a] = _mm256_set1_ps(0.001f * float(a));
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-6f);
  std::uint64_t iters = 0;
  do {
    for (int r = 0; r < kReps; ++r) {
#pragma GCC unroll 12
      for (int a = 0; a < kAcc; ++a) acc[a] = _mm256_fmadd_ps(acc[a], x, y);
    }
    iters += kReps;
  } while (Clock::now() < deadline);
  __m256 s = acc[0];
  for (int a = 1; a < kAcc; ++a) s = _mm256_add_ps(s, acc[a]);
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  float t = 0;
  for (float v : out) t += v;
  g_sink = g_sink + t;
  return double(iters) * kAcc * 8 * 2;
}

// Inputs 2^-10: each vdpbf16ps adds 2^-19 per lane, so the sums stay small and normal.
__attribute__((target("avx512f,avx512bf16"))) double bf16_avx512(Clock::time_point deadline) {
  constexpr int kAcc = 16;
  __m512 acc[kAcc];
  for (int a = 0; a < kAcc; ++a) acc[a] = _mm512_setzero_ps();
  const __m512 v = _mm512_set1_ps(1.0f / 1024.0f);
  const __m512bh a16 = _mm512_cvtne2ps_pbh(v, v);
  std::uint64_t iters = 0;
  do {
    for (int r = 0; r < kReps; ++r) {
#pragma GCC unroll 16
      for (int a = 0; a < kAcc; ++a) acc[a] = _mm512_dpbf16_ps(acc[a], a16, a16);
    }
    iters += kReps;
  } while (Clock::now() < deadline);
  __m512 s = acc[0];
  for (int a = 1; a < kAcc; ++a) s = _mm512_add_ps(s, acc[a]);
  g_sink = g_sink + sum_lanes(s);
  return double(iters) * kAcc * 16 * 4;
}

// The 64-byte AMX tile configuration (palette 1).
struct alignas(64) TileConfig {
  std::uint8_t palette_id;
  std::uint8_t start_row;
  std::uint8_t reserved[14];
  std::uint16_t colsb[16];
  std::uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64);

// g++ 12's AMX intrinsics tell the compiler that ldtilecfg reads 8 bytes and
// that tileloadd/tilestored touch no memory, so it may drop the stores that
// build the configuration or the operands. These wrappers name the whole
// configuration as an input and clobber memory around the tile moves.
#define FW_TILE_LOADD(tmm, base) \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #tmm ::"r"(base), "r"(std::int64_t(64)) : "memory")
#define FW_TILE_STORED(tmm, base) \
  __asm__ volatile("tilestored %%tmm" #tmm ", (%0,%1,1)" ::"r"(base), "r"(std::int64_t(64)) : "memory")
#define FW_TILE_ZERO(tmm) __asm__ volatile("tilezero %%tmm" #tmm ::)
#define FW_TDPBF16PS(c, a, b) __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

// Eight 16x64-byte tiles: four fp32 16x16 accumulators (tmm0-3) fed by two A
// tiles (tmm4-5, 16x32 bf16) and two B tiles (tmm6-7, VNNI pairs) in a 2x2
// block, so four independent TDPBF16PS chains cover the instruction's latency.
__attribute__((target("amx-tile,amx-bf16"))) double bf16_amx(Clock::time_point deadline) {
  TileConfig cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.palette_id = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  alignas(64) bf16_t operand[16 * 32];
  for (auto& e : operand) e = f32_to_bf16(1.0f / 1024.0f);
  __asm__ volatile("ldtilecfg %0" ::"m"(cfg) : "memory");
  FW_TILE_ZERO(0);
  FW_TILE_ZERO(1);
  FW_TILE_ZERO(2);
  FW_TILE_ZERO(3);
  FW_TILE_LOADD(4, operand);
  FW_TILE_LOADD(5, operand);
  FW_TILE_LOADD(6, operand);
  FW_TILE_LOADD(7, operand);
  std::uint64_t iters = 0;
  do {
    for (int r = 0; r < kReps / 8; ++r) {
      FW_TDPBF16PS(0, 4, 6);
      FW_TDPBF16PS(1, 4, 7);
      FW_TDPBF16PS(2, 5, 6);
      FW_TDPBF16PS(3, 5, 7);
    }
    iters += kReps / 8;
  } while (Clock::now() < deadline);
  alignas(64) float out[16 * 16];
  float total = 0;
  FW_TILE_STORED(0, out);
  for (float v : out) total += v;
  FW_TILE_STORED(3, out);
  for (float v : out) total += v;
  __asm__ volatile("tilerelease" ::: "memory");  // drop the tile state so later context switches stay cheap
  g_sink = g_sink + total;
  return double(iters) * 4 * 16 * 16 * 32 * 2;
}

// Linux hands out AMX tile data state only on request (since 5.16); without
// the permission the first tile instruction faults.
bool request_amx(std::string& why) {
  constexpr int kArchReqXcompPerm = 0x1023, kArchGetXcompPerm = 0x1022, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    why = std::string("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) failed: ") + std::strerror(errno) +
          "; AMX needs Linux >= 5.16 with AMX enabled (and, in a VM, AMX passed through)";
    return false;
  }
  unsigned long mask = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &mask) != 0 || !(mask & (1ul << kXfeatureXtiledata))) {
    why = "the kernel accepted the AMX permission request but does not report XTILEDATA as permitted";
    return false;
  }
  return true;
}

using Kernel = ThroughputKernel;

// Every thread runs the kernel back to back in short calls for `seconds`,
// logging each call's start, end and work; no barrier interrupts the run. The
// point's rate is the best aggregate throughput over any kWindow-long stretch:
// the work of all calls that lie inside the window, from all threads, over the
// span from the earliest such start to the latest such end. Work is thus only
// credited to time in which it really ran concurrently (never overstated), and
// other processes' interference, which on a busy machine hits most windows,
// lowers the figure only if it hits all of them.
constexpr double kCall = 0.00025;   // ~10^5-10^6 cycles: setup and clock reads cost < 1%
constexpr double kWindow = 0.004;   // one scheduler tick at HZ=250

struct Call {
  Clock::time_point start, end;
  double flop;
};

double best_window_rate(std::vector<Call>& calls) {
  std::sort(calls.begin(), calls.end(), [](const Call& x, const Call& y) { return x.start < y.start; });
  const auto window = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kWindow));
  double best = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const Clock::time_point limit = calls[i].start + window;
    Clock::time_point last = calls[i].start;
    double flop = 0;
    for (std::size_t j = i; j < calls.size() && calls[j].start < limit; ++j) {
      if (calls[j].end > limit) continue;
      flop += calls[j].flop;
      last = std::max(last, calls[j].end);
    }
    const double span = std::chrono::duration<double>(last - calls[i].start).count();
    if (span > 0) best = std::max(best, flop / span);
  }
  return best;
}

PeakResult run_point(const char* dtype, const char* isa, Kernel kernel, int threads, double seconds) {
  int ran = 0;
  const double rate = best_throughput(kernel, threads, seconds, &ran);
  return {dtype, ran, rate, isa, {}};
}

void sweep(std::vector<PeakResult>& out, const char* dtype, const char* isa, Kernel kernel, double seconds) {
  const int max_threads = omp_get_max_threads();
  for (int t = 1; t <= max_threads; ++t) out.push_back(run_point(dtype, isa, kernel, t, seconds));
}

}  // namespace

double best_throughput(ThroughputKernel kernel, int threads, double seconds, int* ran_out) {
  if (ran_out) *ran_out = 0;
  if (threads < 1 || !(seconds > 0)) return 0.0;
  const auto to_duration = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  std::vector<std::vector<Call>> logs(static_cast<std::size_t>(threads));
  int ran = 0;
  Clock::time_point stop;
#pragma omp parallel num_threads(threads)
  {
    std::vector<Call>& log = logs[std::size_t(omp_get_thread_num())];
    log.reserve(std::size_t(seconds / kCall) + 16);
#pragma omp single
    {
      ran = omp_get_num_threads();
      stop = Clock::now() + to_duration(seconds);
    }  // implicit barrier: everyone starts together
    Clock::time_point now = Clock::now();
    while (now < stop) {
      const Clock::time_point start = now;
      const double work = kernel(start + to_duration(kCall));
      now = Clock::now();
      log.push_back({start, now, work});
    }
  }
  std::vector<Call> all;
  for (const auto& log : logs) all.insert(all.end(), log.begin(), log.end());
  if (ran_out) *ran_out = ran;
  return best_window_rate(all);
}

std::vector<PeakResult> measure_peak(double seconds_per_point) {
  std::vector<PeakResult> out;
  if (__builtin_cpu_supports("avx512f"))
    sweep(out, "fp32", "avx512f", fp32_avx512, seconds_per_point);
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    sweep(out, "fp32", "avx2", fp32_avx2, seconds_per_point);
  else
    out.push_back({"fp32", 0, 0.0, "none", "CPU has neither AVX-512F nor AVX2+FMA; fp32 peak not measured"});

  if (__builtin_cpu_supports("avx512bf16"))
    sweep(out, "bf16", "avx512bf16", bf16_avx512, seconds_per_point);
  else
    out.push_back({"bf16", 0, 0.0, "avx512bf16", "CPU lacks AVX512-BF16 (vdpbf16ps)"});

  std::string why;
  if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16"))
    out.push_back({"bf16", 0, 0.0, "amx-bf16", "CPU lacks AMX-BF16 tiles"});
  else if (!request_amx(why))
    out.push_back({"bf16", 0, 0.0, "amx-bf16", why});
  else
    sweep(out, "bf16", "amx-bf16", bf16_amx, seconds_per_point);
  return out;
}

}  // namespace flopwatt::cpu
