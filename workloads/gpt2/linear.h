// The linear layers of GPT-2 (llm.c's layout, W is (OC, K) row-major):
//   forward   out(N,OC) = inp(N,K) W^T + bias       GemmDesc{M=N, N=OC, K=K, trans_b}
//   backward  dinp(N,K) = dout(N,OC) W              GemmDesc{M=N, N=K, K=OC}
//             dW(OC,K) (+)= dout^T inp               GemmDesc{M=OC, N=K, K=N, trans_a, beta}
//             dbias(OC) += column sums of dout
// Every GEMM goes through the Backend; bias and dbias stay on the CPU. In bf16
// mode the GEMM operands are bf16 (activations converted here, inside the op;
// weights come from the model's bf16 shadow) and results are fp32.
//
// bf16 conversion is part of the op and is reported as such: with a profiler
// set, every GEMM call adds a Breakdown whose copy_in is the time spent since
// the previous call converting (or, for backends without a transposed layout,
// transposing) operands for it, plus the backend's own copy_in (oneDNN's
// in-call weight reorders), and whose compute is the backend's GEMM.
// forward() keeps its bf16 copy of inp, and backward() with the same inp uses
// it instead of converting again (llm.c's backward reads the activations its
// forward saw); a sampled fingerprint of inp guards the copy, and copies past
// kKeptInputCapBytes are dropped oldest first and converted again.
#pragma once
#include <cstdint>
#include <vector>

#include "workloads/backend.h"
#include "workloads/dtype.h"
#include "workloads/gpt2/grad_order.h"
#include "workloads/gpt2/profiler.h"

namespace flopwatt::gpt2 {

class GemmRunner {
 public:
  // Throws InputError naming --gemm-backend when the backend cannot run the
  // dtype at all (checked with a small probe shape).
  GemmRunner(Backend& backend, DType dtype);
  DType dtype() const { return dtype_; }
  Backend& backend() { return backend_; }
  void set_profiler(Profiler* p) { prof_ = p; }
  // The order of backward()'s two GEMMs (grad_order.h). cache_bytes 0: the
  // default budget of this machine's own /sys (default_block_cache_bytes("/"));
  // block_rows > 0 forces the interleaved block size.
  void set_grad_order(GradOrder o, std::int64_t cache_bytes = 0, std::int64_t block_rows = 0);
  GradOrder grad_order() const { return order_; }
  // What the last backward() ran.
  const LinearBackwardPlan& last_backward_plan() const { return last_plan_; }

  // W16 is the bf16 copy of W (bf16 mode only; may be null in fp32 mode).
  void forward(float* out, const float* inp, const float* W, const bf16_t* W16, const float* bias, int N, int K,
               int OC);
  // accumulate_dW: beta = 1 (add to dW) or 0 (overwrite, first write after zero_grad).
  // The two GEMMs run in the order set by set_grad_order.
  void backward(float* dinp, float* dW, float* dbias, const float* dout, const float* inp, const float* W,
                const bf16_t* W16, int N, int K, int OC, bool accumulate_dW);

  // Runs one GEMM; when the backend lacks a transposed layout, materializes the
  // transpose and runs NN. Throws InputError when even that is unsupported.
  void gemm(const GemmDesc& d, const void* A, const void* B, void* C);

 private:
  const bf16_t* to_bf16(const float* x, std::int64_t n, int slot);
  // forward's bf16 copy of inp, refreshed; backward's lookup (null: convert).
  const bf16_t* keep_bf16_input(const float* x, std::int64_t n);
  const bf16_t* kept_bf16_input(const float* x, std::int64_t n) const;
  void convert(bf16_t* out, const float* in, std::int64_t n);

  struct KeptInput {
    const float* src;
    std::int64_t n;
    std::uint64_t print;
    std::vector<bf16_t> data;
  };

  Backend& backend_;
  DType dtype_;
  Profiler* prof_ = nullptr;
  GradOrder order_ = GradOrder::Standard;
  std::int64_t cache_bytes_ = 0, block_rows_ = 0;
  LinearBackwardPlan last_plan_;
  std::vector<bf16_t> conv_[2];
  std::vector<unsigned char> trans_[2];
  std::vector<KeptInput> kept_;  // least recently converted first
  std::int64_t kept_bytes_ = 0;
  std::int64_t copy_ns_ = 0;  // operand conversion since the last GEMM call
  bool copies_operands_ = false;  // bf16, or a backend that needs the transpose fallback
};

// GPT-2 d12 at B=4, T=64 keeps 33 MB; a 1024-token batch of 16 would keep 2.1 GB.
inline constexpr std::int64_t kKeptInputCapBytes = std::int64_t(512) << 20;

// Vectorized, OpenMP-parallel f32 -> bf16 (round to nearest even, as dtype.h).
void convert_to_bf16(bf16_t* out, const float* in, std::int64_t n);

}  // namespace flopwatt::gpt2
