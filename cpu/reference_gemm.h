// cpu:reference -- the naive GEMM every other backend is checked against.
#pragma once
#include <memory>

#include "workloads/backend.h"

namespace flopwatt::cpu {

// The oracle in float64: for every layout, leading dimension and both input
// dtypes (bf16 widened exactly), products summed in double,
//   C_out[i*N + j] = alpha * sum_k op(A)[i,k] * op(B)[k,j] + beta * C_in[i*ldc + j].
// C_out is tight M x N; C_in is read only when beta != 0 (BLAS convention, so an
// uninitialised C with beta == 0 is fine) and may then be null.
void reference_gemm_f64(const GemmDesc& d, const void* A, const void* B, const float* C_in, double* C_out);

// The same computation rounded once to fp32 into C (honouring ldc; padding untouched).
std::unique_ptr<Backend> make_reference_backend();

}  // namespace flopwatt::cpu
