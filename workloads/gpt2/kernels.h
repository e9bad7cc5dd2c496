// The non-GEMM ops of a GPT-2 training step, each forward next to its backward,
// in two implementations with the same contract:
//   flopwatt::gpt2::kernels    fast: OpenMP across rows/heads, `omp simd` inside,
//                              and on AVX-512 machines intrinsics where a loop's
//                              cost is its exp (fast_math.h simd::), a transpose,
//                              or (layernorm backward) reloads GCC could not drop
//   flopwatt::gpt2::reference  naive loops in llm.c's formulation with double
//                              sums; the spec and the oracle of the kernel tests
// Shapes use the letters of config.h; N = B*T rows. "+=" in a contract means the
// kernel accumulates into the buffer, "=" that it overwrites it.
#pragma once
#include <cstdint>

namespace flopwatt::gpt2 {

namespace kernels {

// out(N,C) = wte[inp[n]] + wpe[n % T]
void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C);
// dwte[inp[n]] += dout[n]; dwpe[n % T] += dout[n]
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C);

// out = (x - mean) * rstd * w + b per row (biased variance, eps 1e-5); mean, rstd (N) =
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                       int N, int C);
// dinp += (or = when !accumulate_dinp); dw += ; db +=
void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd, int N, int C, bool accumulate_dinp);

// out(N,OC) += bias(OC) on every row
void bias_forward(float* out, const float* bias, int N, int OC);
// dbias(OC) += column sums of dout(N,OC)
void bias_backward(float* dbias, const float* dout, int N, int OC);

// Causal multi-head attention. qkv (B,T,3C) holds q|k|v; out (B,T,C) =;
// att (B,NH,T,T) = softmax(q k^T / sqrt(hs)) with zeros above the diagonal.
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH);
// dqkv (B,T,3C) = (every element written)
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T, int C,
                        int NH);

// out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
void gelu_forward(float* out, const float* inp, std::int64_t n);
// d = gelu'(inp) * d in place: d holds dout on entry and dinp on return
void gelu_backward_inplace(float* d, const float* inp, std::int64_t n);

// out = a + b
void residual_forward(float* out, const float* a, const float* b, std::int64_t n);

// Every float of every span = 0 (zero_grad: the gradients outside the GEMM
// weights, of many sizes).
struct FloatSpan {
  float* data;
  std::int64_t n;
};
void zero_spans(const FloatSpan* spans, int count);

// Over the first V of each row's Vp logits: lse = log(sum(exp)), losses = lse - logit[target]
void softmax_xent_forward(float* losses, float* lse, const float* logits, const int* targets, int N, int V,
                          int Vp);
// logits (N,Vp) overwritten by dlogits = (softmax - onehot(target)) * dloss for i < V, 0 for V <= i < Vp
void softmax_xent_backward_inplace(float* logits, const float* lse, const int* targets, float dloss, int N, int V,
                                   int Vp);

}  // namespace kernels

namespace reference {

void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C);
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C);
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                       int N, int C);
void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd, int N, int C, bool accumulate_dinp);
void bias_forward(float* out, const float* bias, int N, int OC);
void bias_backward(float* dbias, const float* dout, int N, int OC);
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH);
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T, int C,
                        int NH);
void gelu_forward(float* out, const float* inp, std::int64_t n);
void gelu_backward_inplace(float* d, const float* inp, std::int64_t n);
void residual_forward(float* out, const float* a, const float* b, std::int64_t n);
void softmax_xent_forward(float* losses, float* lse, const float* logits, const int* targets, int N, int V,
                          int Vp);
void softmax_xent_backward_inplace(float* logits, const float* lse, const int* targets, float dloss, int N, int V,
                                   int Vp);

}  // namespace reference

}  // namespace flopwatt::gpt2
