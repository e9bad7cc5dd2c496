// The linear layers of GPT-2 (llm.c's layout, W is (OC, K) row-major):
//   forward   out(N,OC) = inp(N,K) W^T + bias       GemmDesc{M=N, N=OC, K=K, trans_b}
//   backward  dinp(N,K) = dout(N,OC) W              GemmDesc{M=N, N=K, K=OC}
//             dW(OC,K) (+)= dout^T inp               GemmDesc{M=OC, N=K, K=N, trans_a, beta}
//             dbias(OC) += column sums of dout
// Every GEMM goes through the Backend; bias and dbias stay on the CPU. In bf16
// mode the GEMM operands are bf16 (activations converted here, inside the op;
// weights come from the model's bf16 shadow) and results are fp32.
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

  Backend& backend_;
  DType dtype_;
  Profiler* prof_ = nullptr;
  GradOrder order_ = GradOrder::Standard;
  std::int64_t cache_bytes_ = 0, block_rows_ = 0;
  LinearBackwardPlan last_plan_;
  std::vector<bf16_t> conv_[2];
  std::vector<unsigned char> trans_[2];
};

// Vectorized, OpenMP-parallel f32 -> bf16 (round to nearest even, as dtype.h).
void convert_to_bf16(bf16_t* out, const float* in, std::int64_t n);

}  // namespace flopwatt::gpt2
