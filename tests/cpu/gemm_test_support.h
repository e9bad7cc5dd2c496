// Shared by the CPU GEMM tests: random operands for a GemmDesc (leading
// dimensions honoured, padding filled with a sentinel), the awkward-shape case
// list, and the check of one backend call against the float64 reference.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/backend.h"

namespace flopwatt::cpu::testing {

struct Operands {
  std::vector<float> a32, b32;
  std::vector<bf16_t> a16, b16;
  std::vector<float> c;  // initial C, ldc-strided; padding holds kPadding
  const void* A() const;
  const void* B() const;
};

constexpr float kPadding = 12345.0f;

// Uniform [-1, 1) (bf16 inputs rounded to bf16). When beta == 0, C starts as NaN:
// a backend that reads C although beta is 0 then fails verification.
Operands make_operands(const GemmDesc& d, std::uint64_t seed);

// (M, N, K) with 1, 7, 65, 257 and mixtures, x every layout, each plain
// (alpha 1, beta 0, tight) and in two variants with other alpha/beta pairs and
// padded or tight leading dimensions (each layout meets every combination).
std::vector<GemmDesc> awkward_cases(DType dtype_in);

struct CheckResult {
  double rel_error = 0;
  bool padding_intact = true;
};

// One backend.gemm on fresh operands, compared with reference_gemm_f64. With
// `prepare`, backend.prepare(d, B) is called first (outside any timing).
CheckResult check_against_reference(Backend& backend, const GemmDesc& d, std::uint64_t seed, bool prepare = false);

// Runs every case the backend supports; returns one line per failing case
// (empty when all pass). `checked` receives how many cases ran.
std::vector<std::string> check_all(Backend& backend, const std::vector<GemmDesc>& cases, bool prepare,
                                   int* checked);

// A NaN planted in A must make the comparison fail for this backend.
bool nan_in_input_is_caught(Backend& backend, const GemmDesc& d);

}  // namespace flopwatt::cpu::testing
