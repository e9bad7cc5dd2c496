// Random GEMM operands for timed loops, shared by `flopwatt run gemm`
// (harness/runners/gemm_runner.cpp) and flopwatt_bench (bench/gemm.cpp) so
// both time the same kind of data over the same cache footprint.
#pragma once
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "workloads/backend.h"

namespace flopwatt {

// One set of operands in the dtype the backend receives: uniform [-1, 1)
// floats, with bf16 copies of A and B when dtype_in is bf16; c holds C's
// initial values (C is read when beta != 0) and receives the results.
struct GemmOperands {
  std::vector<float> a32, b32, c;
  std::vector<bf16_t> a16, b16;
  const void* A(DType d) const { return d == DType::F32 ? (const void*)a32.data() : (const void*)a16.data(); }
  const void* B(DType d) const { return d == DType::F32 ? (const void*)b32.data() : (const void*)b16.data(); }
};

// Draws A, then B, then C from rng, so a fixed seed gives the same operands everywhere.
GemmOperands make_gemm_operands(const GemmDesc& d, std::mt19937_64& rng);

// The largest cache of CPU 0 as sysfs below `root` describes it ("/", or the
// tree --sysfs-root names), 32 MiB when unreadable.
std::size_t last_level_cache_bytes(const std::string& root);

// Repetitions rotate over several operand sets so that a small GEMM is not
// timed on a cache that training would not have warmed for it: enough sets to
// cover rotate_bytes (0: twice the last-level cache below `root`), at least 1
// and at most 8 (so the smallest shapes cover less).
int rotated_set_count(const GemmDesc& d, std::size_t rotate_bytes, const std::string& root);
std::vector<GemmOperands> make_rotated_operands(const GemmDesc& d, std::mt19937_64& rng, std::size_t rotate_bytes,
                                                const std::string& root);

}  // namespace flopwatt
