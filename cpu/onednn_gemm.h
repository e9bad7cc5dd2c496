// cpu:onednn -- oneDNN's matmul primitive: fp32, and bf16 x bf16 -> fp32 (oneDNN
// picks AMX or AVX512-BF16 kernels where the CPU has them).
//
// Primitives are created once per GemmDesc and cached (creation costs
// milliseconds). prepare(desc, B) reorders B once into the layout the primitive
// prefers and keeps that copy, keyed by (desc, B pointer); gemm() with that
// pointer uses it while a sampled fingerprint of B's contents still matches what
// prepare() saw, and otherwise falls back to the plain-layout primitive. So
// after B changes (a training step), call prepare() again to get the packed
// speed back; results are right either way. notes() states this.
//
// Built as a "not available" twin when CMake found no oneDNN (private define
// FLOPWATT_WITH_ONEDNN).
#pragma once
#include <memory>

#include "workloads/backend.h"

namespace flopwatt::cpu {

std::unique_ptr<Backend> make_onednn_backend();

}  // namespace flopwatt::cpu
