// The instrumented ops of a training step: their names, pass, how often they
// occur, and their analytic FLOPs and bytes (formulas in op_table.cpp).
#pragma once
#include <cstdint>
#include <string_view>

#include "workloads/dtype.h"
#include "workloads/gpt2/config.h"

namespace flopwatt::gpt2 {

enum class Op : std::uint8_t {
  // forward, in execution order
  EmbedFwd, Ln1Fwd, QkvFwd, AttnFwd, AttprojFwd, ResidualFwd, Ln2Fwd, FcFwd, GeluFwd, FcprojFwd,
  LnfFwd, LmHeadFwd, SoftmaxXentFwd,
  // backward, in execution order (residual backward is free: the residual
  // stream's gradient is one buffer that every branch adds into)
  ZeroGrad, SoftmaxXentBwd, LmHeadBwd, LnfBwd, FcprojBwd, GeluBwd, FcBwd, Ln2Bwd, AttprojBwd, AttnBwd,
  QkvBwd, Ln1Bwd, EmbedBwd,
  // optimizer
  AdamW,
  // host work outside the model: loading the next batch
  Data,
  kCount
};
inline constexpr int kNumOps = static_cast<int>(Op::kCount);

struct OpInfo {
  Op op;
  const char* name;   // report name: "qkv"; forward and backward twins share it
  const char* pass;   // "fwd" | "bwd" | "opt" | "" (outside the model)
  int per_layer;      // occurrences per layer (0: once per step)
  bool gemm;          // runs a GEMM through the Backend
};

const OpInfo& op_info(Op op);

// Analytic cost of ONE occurrence of the op (one layer for per-layer ops).
struct OpCost {
  double flop = 0;
  double bytes = 0;  // compulsory traffic: every operand read once, every result written once
  // exps evaluated (each also one of the FLOPs): GELU's sigmoid, the softmax
  // of attention and of the cross-entropy. Their roof counts them at the
  // machine's measured exp rate (exp_rate.h) too.
  double exps = 0;
};
// gemm_dtype decides the operand bytes of GEMM inputs (bf16: 2 bytes each,
// plus the fp32 read and bf16 write of the on-the-fly conversions).
OpCost op_cost(Op op, const Config& c, int B, int T, DType gemm_dtype);
// The stream pattern of the op's kernel, as `run peak` names it
// (cpu/bandwidth.h: read, copy, triad, r1u3, ...), whose measured bandwidth
// bounds the op; nullptr for the GEMMs, whose roof is compute (or the fastest
// stream of their level). AdamW in bf16 also writes the bf16 parameter copy.
const char* memory_pattern(Op op, DType gemm_dtype);
// Occurrences of the op in one training step (L x per_layer, or 1).
int op_occurrences(Op op, const Config& c);
// Sum over every op of one step: the FLOPs of a training step.
double step_flop(const Config& c, int B, int T, DType gemm_dtype);

}  // namespace flopwatt::gpt2
