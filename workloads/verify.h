// Comparing a backend's GEMM output with a reference: relative Frobenius error
//   err = ||got - ref||_F / ||ref||_F
// accumulated in double. A NaN or an infinity on either side makes err NaN, so
// `passes(err, tol)` is false: a kernel that writes NaN must never verify, and an
// infinity cannot be compared relatively. When ||ref||_F is 0 the error is 0 if
// `got` is all zeros too and +inf otherwise (no division by zero).
#pragma once
#include <cstddef>

#include "workloads/dtype.h"

namespace flopwatt {

// Flat arrays of n elements.
double rel_frobenius_error(const float* got, const double* ref, std::size_t n);
double rel_frobenius_error(const float* got, const float* ref, std::size_t n);

// Row-major matrices of rows x cols with their own row strides (elements), so a
// C with ldc > N is compared without its padding.
double rel_frobenius_error(const float* got, std::size_t ld_got, const double* ref, std::size_t ld_ref,
                           std::size_t rows, std::size_t cols);
double rel_frobenius_error(const float* got, std::size_t ld_got, const float* ref, std::size_t ld_ref,
                           std::size_t rows, std::size_t cols);

// The project's GEMM acceptance tolerances against a float64 reference:
// fp32 inputs 1e-4, bf16 inputs (fp32 accumulation) 1e-2.
double gemm_tolerance(DType dtype_in);

// err <= tol, false for NaN (and for +inf).
bool passes(double rel_error, double tolerance);

}  // namespace flopwatt
