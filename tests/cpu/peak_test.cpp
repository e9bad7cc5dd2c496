#include "cpu/peak.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <map>

namespace flopwatt::cpu {
namespace {

// Structure and sanity only: rates depend on what else the machine is doing,
// so no timing threshold beyond physical upper bounds that catch a miscounted
// FLOP factor (e.g. counting instructions as FLOPs x 1000).
TEST(Peak, RowsArePositiveFiniteAndOrdered) {
  const auto rows = measure_peak(0.02);
  ASSERT_FALSE(rows.empty());
  const int max_threads = omp_get_max_threads();
  std::map<std::string, std::vector<int>> threads_by_isa;
  bool seen_bf16 = false;
  for (const auto& r : rows) {
    SCOPED_TRACE(r.dtype + "/" + r.isa + " threads=" + std::to_string(r.threads));
    ASSERT_TRUE(r.dtype == "fp32" || r.dtype == "bf16");
    if (r.dtype == "bf16") seen_bf16 = true;
    EXPECT_FALSE(r.dtype == "fp32" && seen_bf16) << "fp32 rows come first";
    if (r.threads == 0) {
      EXPECT_EQ(r.flop_per_s, 0.0);
      EXPECT_FALSE(r.note.empty()) << "an unmeasured ISA says why";
      continue;
    }
    EXPECT_TRUE(r.note.empty());
    EXPECT_TRUE(std::isfinite(r.flop_per_s));
    EXPECT_GT(r.flop_per_s, 0.0);
    const double per_thread = r.flop_per_s / r.threads;
    // 64 fp32 flop/cycle/core (2 x 512-bit FMA) at 8 GHz; AMX 2048 bf16 flop/cycle at 8 GHz.
    EXPECT_LT(per_thread, r.isa == "amx-bf16" ? 2048 * 8e9 : 128 * 8e9);
    threads_by_isa[r.isa].push_back(r.threads);
  }
  EXPECT_TRUE(threads_by_isa.count("avx512f") || threads_by_isa.count("avx2")) << "x86-64 build machine has FMA";
  for (const auto& [isa, ts] : threads_by_isa) {
    std::vector<int> want;
    for (int t = 1; t <= max_threads; ++t) want.push_back(t);
    EXPECT_EQ(ts, want) << isa << ": one row per thread count 1..N, ascending";
  }
}

TEST(Peak, MeasuresEveryIsaThisCpuAdvertises) {
  const auto rows = measure_peak(0.01);
  auto measured = [&](const std::string& isa) {
    for (const auto& r : rows)
      if (r.isa == isa && r.flop_per_s > 0) return true;
    return false;
  };
  auto noted = [&](const std::string& isa) {
    for (const auto& r : rows)
      if (r.isa == isa && r.threads == 0 && !r.note.empty()) return true;
    return false;
  };
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_TRUE(measured("avx512f"));
  }
  // AVX512-BF16 needs no OS permission: advertised means measured.
  if (__builtin_cpu_supports("avx512bf16")) {
    EXPECT_TRUE(measured("avx512bf16"));
  }
  // AMX needs the kernel's permission: measured, or a reason why not.
  if (__builtin_cpu_supports("amx-bf16")) {
    EXPECT_TRUE(measured("amx-bf16") || noted("amx-bf16"));
  }
}


// best_throughput, which measure_peak and the exp rate share: nothing to
// measure gives 0 and no thread.
double one_flop(std::chrono::steady_clock::time_point) { return 1.0; }

TEST(Peak, BestThroughputOfNothingIsZero) {
  int ran = -1;
  EXPECT_EQ(best_throughput(one_flop, 0, 0.01, &ran), 0.0);
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(best_throughput(one_flop, 1, 0.0), 0.0);
  EXPECT_EQ(best_throughput(one_flop, 1, -1.0), 0.0);
  EXPECT_EQ(best_throughput(one_flop, 1, std::nan("")), 0.0);
  EXPECT_GT(best_throughput(one_flop, 1, 0.01, &ran), 0.0);
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace flopwatt::cpu
