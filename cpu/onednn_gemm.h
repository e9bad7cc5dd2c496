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
// A B that was never prepared (GPT-2's weights change every step) is run as
// OnednnPacking says: in place, reordered inside the call, or (Auto, the default)
// whichever of the two the shape's first calls timed faster. The environment
// variable FLOPWATT_ONEDNN_PACK=auto|always|never picks the mode.
//
// Built as a "not available" twin when the build has no oneDNN
// (onednn_gemm_none.cpp; CMake option FLOPWATT_WITH_ONEDNN).
#pragma once
#include <memory>

#include "workloads/backend.h"

namespace flopwatt::cpu {

enum class OnednnPacking { Auto, Always, Never };

// Mode from FLOPWATT_ONEDNN_PACK (InputError on an unknown value).
std::unique_ptr<Backend> make_onednn_backend();
// long_call_s: in Auto, a call at least this long is timed once per way (both
// ways in the same call when beta is 0) instead of twice.
std::unique_ptr<Backend> make_onednn_backend(OnednnPacking packing, double long_call_s = 0.02);

}  // namespace flopwatt::cpu
