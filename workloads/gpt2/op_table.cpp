#include "workloads/gpt2/op_table.h"

#include "workloads/gpt2/tensor_table.h"

namespace flopwatt::gpt2 {

namespace {

constexpr OpInfo kOps[kNumOps] = {
    {Op::EmbedFwd, "embed", "fwd", 0, false},
    {Op::Ln1Fwd, "ln1", "fwd", 1, false},
    {Op::QkvFwd, "qkv", "fwd", 1, true},
    {Op::AttnFwd, "attn", "fwd", 1, false},
    {Op::AttprojFwd, "attproj", "fwd", 1, true},
    {Op::ResidualFwd, "residual", "fwd", 2, false},
    {Op::Ln2Fwd, "ln2", "fwd", 1, false},
    {Op::FcFwd, "fc", "fwd", 1, true},
    {Op::GeluFwd, "gelu", "fwd", 1, false},
    {Op::FcprojFwd, "fcproj", "fwd", 1, true},
    {Op::LnfFwd, "lnf", "fwd", 0, false},
    {Op::LmHeadFwd, "lm_head", "fwd", 0, true},
    {Op::SoftmaxXentFwd, "softmax_xent", "fwd", 0, false},
    {Op::ZeroGrad, "zero_grad", "bwd", 0, false},
    {Op::SoftmaxXentBwd, "softmax_xent", "bwd", 0, false},
    {Op::LmHeadBwd, "lm_head", "bwd", 0, true},
    {Op::LnfBwd, "lnf", "bwd", 0, false},
    {Op::FcprojBwd, "fcproj", "bwd", 1, true},
    {Op::GeluBwd, "gelu", "bwd", 1, false},
    {Op::FcBwd, "fc", "bwd", 1, true},
    {Op::Ln2Bwd, "ln2", "bwd", 1, false},
    {Op::AttprojBwd, "attproj", "bwd", 1, true},
    {Op::AttnBwd, "attn", "bwd", 1, false},
    {Op::QkvBwd, "qkv", "bwd", 1, true},
    {Op::Ln1Bwd, "ln1", "bwd", 1, false},
    {Op::EmbedBwd, "embed", "bwd", 0, false},
    {Op::AdamW, "adamw", "opt", 0, false},
    {Op::Data, "data", "", 0, false},
};

constexpr bool table_in_enum_order() {
  for (int i = 0; i < kNumOps; ++i)
    if (static_cast<int>(kOps[i].op) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "kOps rows must follow the order of enum Op");

// A linear layer out(N,OC) = inp(N,K) W(OC,K)^T (+ bias).
//   forward  FLOP = 2 N K OC             (GEMM)
//                 + N OC                 (bias add, when the layer has a bias)
//   backward FLOP = 2 N OC K             (dinp = dout W)
//                 + 2 OC K N             (dW += dout^T inp; the += is not counted)
//                 + N OC                 (dbias = column sums of dout)
//   bytes, e = GEMM operand size (4 fp32, 2 bf16):
//   forward  = e (N K + OC K) + 4 N OC   (A, B read, C written)
//            + 8 N OC + 4 OC             (bias pass: C read and written, bias read)
//            + 6 N K when bf16           (inp read as fp32, written as bf16)
//   backward = e (N OC + OC K) + 4 N K   (dinp GEMM)
//            + e (N OC + N K) + 8 OC K   (dW GEMM: dW read and written)
//            + 4 N OC + 4 OC             (dbias)
//            + 6 (N OC + N K) when bf16  (dout and inp converted)
OpCost linear_cost(bool fwd, double N, double K, double OC, bool bias, DType dt) {
  const double e = dtype_size(dt);
  const bool bf16 = dt == DType::BF16;
  OpCost c;
  if (fwd) {
    c.flop = 2 * N * K * OC + (bias ? N * OC : 0);
    c.bytes = e * (N * K + OC * K) + 4 * N * OC + (bias ? 8 * N * OC + 4 * OC : 0) + (bf16 ? 6 * N * K : 0);
  } else {
    c.flop = 4 * N * K * OC + (bias ? N * OC : 0);
    c.bytes = e * (N * OC + OC * K) + 4 * N * K + e * (N * OC + N * K) + 8 * OC * K +
              (bias ? 4 * N * OC + 4 * OC : 0) + (bf16 ? 6 * (N * OC + N * K) : 0);
  }
  return c;
}

// Parameter floats whose gradients zero_grad clears: all but the GEMM weights,
// whose first gradient GEMM of a step overwrites (beta = 0) instead of adding.
double zeroed_grad_floats(const Config& c) {
  const double C = c.C, L = c.L;
  const double gemm_weights = double(c.Vp) * C + L * (3 * C * C + C * C + 4 * C * C + 4 * C * C);
  return double(num_parameters(c)) - gemm_weights;
}

}  // namespace

const OpInfo& op_info(Op op) { return kOps[static_cast<int>(op)]; }

int op_occurrences(Op op, const Config& c) {
  const OpInfo& i = op_info(op);
  return i.per_layer ? i.per_layer * c.L : 1;
}

// FLOP conventions: add, mul, compare = 1; fused multiply-add = 2; exp, log,
// sqrt, division = 1 each. N = B T rows, P = T (T + 1) / 2 causal (query, key)
// pairs per head, hs = C / NH, n4 = N 4C GELU elements, Pn = parameter count.
OpCost op_cost(Op op, const Config& c, int B_, int T_, DType dt) {
  const double B = B_, T = T_, N = B * T, C = c.C, NH = c.NH, hs = double(c.C) / c.NH;
  const double V = c.V, Vp = c.Vp, P = T * (T + 1) / 2, n4 = N * 4 * C;
  const double Pn = double(num_parameters(c));
  OpCost r;
  switch (op) {
    case Op::EmbedFwd:  // out = wte[tok] + wpe[t]: 1 add per element
      r = {N * C, 12 * N * C + 4 * N};
      break;
    case Op::EmbedBwd:  // dwte[tok] += d, dwpe[t] += d: 2 adds per element
      r = {2 * N * C, 20 * N * C + 4 * N};
      break;
    case Op::Ln1Fwd:
    case Op::Ln2Fwd:
    case Op::LnfFwd:  // mean C, variance 3C (sub, fma), normalize+affine 4C
      r = {8 * N * C, 8 * N * C + 8 * C + 8 * N};
      break;
    case Op::Ln1Bwd:
    case Op::Ln2Bwd:  // norm 2, dnorm 1, two reductions 3, dw 2, db 1, dx 5 per element
      r = {14 * N * C, 16 * N * C + 20 * C + 8 * N};  // dy, x read; dx read and written (+=)
      break;
    case Op::LnfBwd:  // starts the residual gradient: dx written, never read
      r = {14 * N * C, 12 * N * C + 20 * C + 8 * N};
      break;
    case Op::QkvFwd: r = linear_cost(true, N, C, 3 * C, true, dt); break;
    case Op::QkvBwd: r = linear_cost(false, N, C, 3 * C, true, dt); break;
    case Op::AttprojFwd: r = linear_cost(true, N, C, C, true, dt); break;
    case Op::AttprojBwd: r = linear_cost(false, N, C, C, true, dt); break;
    case Op::FcFwd: r = linear_cost(true, N, C, 4 * C, true, dt); break;
    case Op::FcBwd: r = linear_cost(false, N, C, 4 * C, true, dt); break;
    case Op::FcprojFwd: r = linear_cost(true, N, 4 * C, C, true, dt); break;
    case Op::FcprojBwd: r = linear_cost(false, N, 4 * C, C, true, dt); break;
    case Op::LmHeadFwd: r = linear_cost(true, N, C, Vp, false, dt); break;  // padded columns are computed
    case Op::LmHeadBwd: r = linear_cost(false, N, C, Vp, false, dt); break;
    case Op::AttnFwd:  // per pair: q.k 2hs, scale 1, max 1, sub+exp 2, sum 1, normalize 1, att.v 2hs
      r = {B * NH * P * (4 * hs + 6), 4 * (3 * N * C + N * C + B * NH * T * T), B * NH * P};
      break;
    case Op::AttnBwd:  // per pair: datt 2hs, dv 2hs, dot 2, dpre 3, dq 2hs, dk 2hs (no exp: att is kept)
      r = {B * NH * P * (8 * hs + 5), 4 * (3 * N * C + B * NH * T * T + N * C + 3 * N * C)};
      break;
    case Op::GeluFwd:  // x^3 2, poly 2, scale 2, exp 1, add 1, div 1, mul 1
      r = {10 * n4, 8 * n4, n4};
      break;
    case Op::GeluBwd:  // the forward's 9 to reach s, 10 for the derivative, 1 for the product
      r = {20 * n4, 12 * n4, n4};  // the sigmoid again, not kept from the forward
      break;
    case Op::ResidualFwd:
      r = {N * C, 12 * N * C};
      break;
    case Op::SoftmaxXentFwd:  // max, sub, exp, sum over the V real columns
      r = {4 * N * V + 2 * N, 4 * N * V + 16 * N, N * V};  // (and one exp per 2048-column chunk: not counted)
      break;
    case Op::SoftmaxXentBwd:  // sub, exp, mul per real column; padded columns zeroed
      r = {3 * N * V + N, 8 * N * V + 4 * N * (Vp - V) + 12 * N, N * V};
      break;
    case Op::ZeroGrad:
      r = {0, 4 * zeroed_grad_floats(c)};
      break;
    case Op::AdamW:  // m 3, v 4, two bias corrections 2, sqrt 1, eps 1, div 1, decay 2, lr 1, update 1
      r = {16 * Pn, 28 * Pn + (dt == DType::BF16 ? 2 * Pn : 0)};
      break;
    case Op::Data:
      r = {0, 8 * N};
      break;
    case Op::kCount:
      break;
  }
  return r;
}

// Each op's kernel in workloads/gpt2/kernels.cpp and attention.cpp, by the
// arrays of N x C (or larger) it streams; small per-row or per-channel arrays
// are left out. A rewritten array (x += ..., in place) is a "u" stream: read
// and written back with no write-allocate read, which a copy does not measure.
const char* memory_pattern(Op op, DType dt) {
  switch (op) {
    case Op::EmbedFwd: return "triad";         // wte row + wpe row -> out
    case Op::EmbedBwd: return "r1u1";          // dwte, dwpe += dout (one read, the adds in place)
    case Op::Ln1Fwd: case Op::Ln2Fwd: case Op::LnfFwd: return "copy";  // x -> out
    case Op::Ln1Bwd: case Op::Ln2Bwd: return "r2u1";  // dy, x read; dx +=
    case Op::LnfBwd: return "triad";           // dy, x read; dx written
    case Op::AttnFwd: return "copy";           // qkv -> out, att
    case Op::AttnBwd: return "triad";          // qkv, att, dout read; dqkv written
    case Op::ResidualFwd: return "triad";      // a + b -> out
    case Op::GeluFwd: return "copy";           // x -> out
    case Op::GeluBwd: return "r1u1";           // x read; d *= gelu'(x) in place
    case Op::SoftmaxXentFwd: return "read";    // logits read, one loss per row
    case Op::SoftmaxXentBwd: return "update";  // logits turned into dlogits in place
    case Op::ZeroGrad: return "write";         // memset
    case Op::AdamW: return dt == DType::BF16 ? "r1u3h1" : "r1u3";  // g read; p, m, v in place (+ bf16 p)
    case Op::Data: return "copy";
    default: return nullptr;                   // GEMMs
  }
}

double step_flop(const Config& c, int B, int T, DType dt) {
  double f = 0;
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    f += op_occurrences(op, c) * op_cost(op, c, B, T, dt).flop;
  }
  return f;
}

}  // namespace flopwatt::gpt2
