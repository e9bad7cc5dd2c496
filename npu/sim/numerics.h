// The GEMM result exactly as the XDNA array computes it under IRON's
// whole-array design:
//   - A and B reach the array as bf16: the host rounds fp32 inputs to nearest
//     even (bf16 inputs pass unchanged);
//   - each core accumulates its C tile in fp32, products added in k order
//     (a bf16 x bf16 product is exact in fp32, so fused or not gives the same
//     bits);
//   - with bf16 output the C buffer in core memory is bf16 between kernel
//     calls, so the running sum is rounded to bf16 after every k-tile;
//   - when the design covers K in several commands (k_chunk < K), each
//     command's result comes back in the output type and the host adds the
//     partial results in fp32;
//   - the host applies alpha and beta: C = alpha * acc + beta * C.
// Fast enough for GPT-2 124M shapes: packed bf16-rounded panels, an 8 x 32
// register-blocked micro-kernel, OpenMP over output blocks.
#pragma once
#include <cstdint>

#include "workloads/backend.h"

namespace flopwatt::npu {

// k_tile: the plan's k (bf16-output rounding interval); k_chunk: K per
// command (0 or >= K: one command). k_chunk must be a multiple of k_tile.
void simulate_gemm(const GemmDesc& d, const void* A, const void* B, void* C, int k_tile, std::int64_t k_chunk);

}  // namespace flopwatt::npu
