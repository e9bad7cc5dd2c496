// cpu:openblas -- cblas_sgemm (and cblas_sbgemm for bf16 when the installed
// OpenBLAS exports it, looked up at run time). Built as a "not available" twin
// when the build has no OpenBLAS (openblas_gemm_none.cpp; CMake option FLOPWATT_WITH_OPENBLAS).
#pragma once
#include <memory>

#include "workloads/backend.h"

namespace flopwatt::cpu {

std::unique_ptr<Backend> make_openblas_backend();

}  // namespace flopwatt::cpu
