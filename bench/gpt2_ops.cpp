#include "bench/gpt2_ops.h"

#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "workloads/gpt2/adamw.h"
#include "workloads/gpt2/kernels.h"
#include "workloads/gpt2/model.h"
#include "workloads/gpt2/tensor_table.h"

namespace flopwatt::gbench {

namespace {

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A counter-based generator, so AdamW's ~500M floats at d12 fill in parallel
// and the values do not depend on the thread count.
void fill(float* p, std::int64_t n, std::uint64_t seed, float lo, float hi) {
  const std::uint64_t s = splitmix(seed);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const double u = double(splitmix(s ^ std::uint64_t(i)) >> 11) * 0x1.0p-53;
    p[i] = lo + float(u) * (hi - lo);
  }
}

void fill_tokens(int* p, std::int64_t n, std::uint64_t seed, int V) {
  const std::uint64_t s = splitmix(seed);
  for (std::int64_t i = 0; i < n; ++i) p[i] = int(splitmix(s ^ std::uint64_t(i)) % std::uint64_t(V));
}

// The buffers an op's kernel runs on, the call the benchmark times, and the
// outputs finite() checks.
struct OpBuffers {
  std::vector<gpt2::Arena<float>> f;
  gpt2::Arena<int> tokens;
  gpt2::Arena<bf16_t> shadow;
  std::function<void()> call;
  std::vector<std::pair<const float*, std::int64_t>> rewritten;  // checked by finite()
  int t = 0;                                                     // AdamW's update count

  float* buf(std::int64_t n, float lo = -1, float hi = 1) {
    f.emplace_back(n);
    fill(f.back().data(), n, f.size(), lo, hi);
    return f.back().data();
  }
  float* zeros(std::int64_t n) {
    f.emplace_back(n);
    return f.back().data();
  }
  int* toks(std::int64_t n, int V) {
    tokens = gpt2::Arena<int>(n);
    fill_tokens(tokens.data(), n, 7, V);
    return tokens.data();
  }
};

using gpt2::Op;
namespace k = gpt2::kernels;

// One set-up per kind of op. The calls capture sizes by value: they outlive the constructor.
void embedding(OpBuffers& s, Op op, const gpt2::Config& c, int B, int T) {
  const int C = c.C, V = c.V, Vp = c.Vp, N = B * T;
  const std::int64_t NC = std::int64_t(N) * C;
  if (op == Op::EmbedFwd) {
    float *out = s.zeros(NC), *wte = s.buf(std::int64_t(Vp) * C), *wpe = s.buf(std::int64_t(c.maxT) * C);
    const int* in = s.toks(N, V);
    s.call = [=] { k::encoder_forward(out, in, wte, wpe, B, T, C); };
    return;
  }
  float *dwte = s.zeros(std::int64_t(Vp) * C), *dwpe = s.zeros(std::int64_t(c.maxT) * C), *dout = s.buf(NC);
  const int* in = s.toks(N, V);
  s.call = [=] { k::encoder_backward(dwte, dwpe, dout, in, B, T, C); };
  s.rewritten = {{dwte, std::int64_t(Vp) * C}, {dwpe, std::int64_t(c.maxT) * C}};
}

void layernorm(OpBuffers& s, Op op, const gpt2::Config& c, int B, int T) {
  const int C = c.C, N = B * T;
  const std::int64_t NC = std::int64_t(N) * C;
  if (op == Op::Ln1Fwd || op == Op::Ln2Fwd || op == Op::LnfFwd) {
    float *out = s.zeros(NC), *mean = s.zeros(N), *rstd = s.zeros(N), *inp = s.buf(NC, -2, 2);
    float *w = s.buf(C, 0.5f, 1.5f), *b = s.buf(C, -0.1f, 0.1f);
    s.call = [=] { k::layernorm_forward(out, mean, rstd, inp, w, b, N, C); };
    return;
  }
  float *dinp = s.zeros(NC), *dw = s.zeros(C), *db = s.zeros(C), *dout = s.buf(NC), *inp = s.buf(NC, -2, 2);
  float *w = s.buf(C, 0.5f, 1.5f), *b = s.buf(C, -0.1f, 0.1f), *out = s.zeros(NC), *mean = s.zeros(N),
        *rstd = s.zeros(N);
  k::layernorm_forward(out, mean, rstd, inp, w, b, N, C);
  // The final LayerNorm's backward starts the residual gradient; the blocks' add into it.
  const bool acc = op != Op::LnfBwd;
  s.call = [=] { k::layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, acc); };
  s.rewritten = {{dinp, NC}, {dw, C}, {db, C}};
}

void attention(OpBuffers& s, Op op, const gpt2::Config& c, int B, int T) {
  const int C = c.C, NH = c.NH, N = B * T;
  const std::int64_t NC = std::int64_t(N) * C;
  if (op == Op::AttnFwd) {
    float *out = s.zeros(NC), *att = s.zeros(std::int64_t(B) * NH * T * T), *qkv = s.buf(3 * NC);
    s.call = [=] { k::attention_forward(out, att, qkv, B, T, C, NH); };
    return;
  }
  float *dqkv = s.zeros(3 * NC), *dout = s.buf(NC), *qkv = s.buf(3 * NC), *out = s.zeros(NC),
        *att = s.zeros(std::int64_t(B) * NH * T * T);
  k::attention_forward(out, att, qkv, B, T, C, NH);
  s.call = [=] { k::attention_backward(dqkv, dout, qkv, att, B, T, C, NH); };
}

// The residual add and GELU, elementwise over (N, C) and (N, 4C).
void pointwise(OpBuffers& s, Op op, const gpt2::Config& c, int B, int T) {
  const std::int64_t NC = std::int64_t(B * T) * c.C, N4C = 4 * NC;
  if (op == Op::ResidualFwd) {
    float *out = s.zeros(NC), *a = s.buf(NC), *b = s.buf(NC);
    s.call = [=] { k::residual_forward(out, a, b, NC); };
  } else if (op == Op::GeluFwd) {
    float *out = s.zeros(N4C), *inp = s.buf(N4C, -3, 3);
    s.call = [=] { k::gelu_forward(out, inp, N4C); };
  } else {
    // d *= gelu'(x) again on every call: for x this far right gelu'(x)
    // rounds to 1, so d neither dies into denormals nor overflows, and the
    // kernel's branch-free arithmetic costs what it costs on any x.
    float *d = s.buf(N4C), *inp = s.buf(N4C, 6, 8);
    s.call = [=] { k::gelu_backward_inplace(d, inp, N4C); };
    s.rewritten = {{d, N4C}};
  }
}

void softmax_xent(OpBuffers& s, Op op, const gpt2::Config& c, int B, int T) {
  const int V = c.V, Vp = c.Vp, N = B * T;
  float *losses = s.zeros(N), *lse = s.zeros(N), *logits = s.buf(std::int64_t(N) * Vp, -4, 4);
  const int* tg = s.toks(N, V);
  if (op == Op::SoftmaxXentFwd) {
    s.call = [=] { k::softmax_xent_forward(losses, lse, logits, tg, N, V, Vp); };
    return;
  }
  k::softmax_xent_forward(losses, lse, logits, tg, N, V, Vp);
  // In place, so later calls read the previous dlogits: exp(dlogit - lse)
  // stays below 1, and the values stay bounded.
  const float dloss = 1.0f / float(N);
  s.call = [=] { k::softmax_xent_backward_inplace(logits, lse, tg, dloss, N, V, Vp); };
  s.rewritten = {{logits, std::int64_t(N) * Vp}};
}

// Clearing the gradients and AdamW: over every parameter, not per layer.
void optimizer(OpBuffers& s, Op op, const gpt2::Config& c, int B, int T, DType dtype) {
  if (op == Op::ZeroGrad) {
    // The step's kernel over one span of as many floats as the step clears
    // (its bytes / 4); the step's are one span per parameter tensor.
    const auto n = std::int64_t(gpt2::op_cost(op, c, B, T, dtype).bytes / sizeof(float));
    float* g = s.buf(n);
    s.call = [=] {
      const k::FloatSpan span{g, n};
      k::zero_spans(&span, 1);
    };
    return;
  }
  const std::int64_t P = gpt2::num_parameters(c);
  float *p = s.buf(P, -0.05f, 0.05f), *g = s.buf(P, -0.01f, 0.01f), *m = s.zeros(P), *v = s.zeros(P);
  if (dtype == DType::BF16) s.shadow = gpt2::Arena<bf16_t>(P);
  bf16_t* sh = s.shadow ? s.shadow.data() : nullptr;
  // One more update per call: with the gradient fixed, p moves by at most lr per call.
  OpBuffers* ip = &s;
  s.call = [=] { gpt2::adamw_update(p, g, m, v, sh, P, gpt2::AdamWConfig{}, ++ip->t); };
  s.rewritten = {{p, P}, {m, P}, {v, P}};
}

}  // namespace

bool gpt2_op_benchmarked(gpt2::Op op) { return !gpt2::op_info(op).gemm && op != gpt2::Op::Data; }

struct Gpt2OpKernel::Impl : OpBuffers {};

Gpt2OpKernel::Gpt2OpKernel(gpt2::Op op, const gpt2::Config& c, int B, int T, DType dtype)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  switch (op) {
    case Op::EmbedFwd:
    case Op::EmbedBwd: embedding(s, op, c, B, T); break;
    case Op::Ln1Fwd:
    case Op::Ln2Fwd:
    case Op::LnfFwd:
    case Op::Ln1Bwd:
    case Op::Ln2Bwd:
    case Op::LnfBwd: layernorm(s, op, c, B, T); break;
    case Op::AttnFwd:
    case Op::AttnBwd: attention(s, op, c, B, T); break;
    case Op::ResidualFwd:
    case Op::GeluFwd:
    case Op::GeluBwd: pointwise(s, op, c, B, T); break;
    case Op::SoftmaxXentFwd:
    case Op::SoftmaxXentBwd: softmax_xent(s, op, c, B, T); break;
    case Op::ZeroGrad:
    case Op::AdamW: optimizer(s, op, c, B, T, dtype); break;
    default:
      throw std::logic_error(std::string("no isolated benchmark for GPT-2 op ") + gpt2::op_info(op).name);
  }
  s.call();  // first touch of outputs stays out of the timed loop
}

Gpt2OpKernel::~Gpt2OpKernel() = default;

void Gpt2OpKernel::run() { impl_->call(); }

bool Gpt2OpKernel::finite() const {
  for (const auto& [p, n] : impl_->rewritten) {
    bool ok = true;
#pragma omp parallel for reduction(&& : ok) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) ok = ok && std::isfinite(p[i]);
    if (!ok) return false;
  }
  return true;
}

}  // namespace flopwatt::gbench
