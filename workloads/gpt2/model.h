// GPT-2 as llm.c's CPU trainer defines it: token + position embeddings, L
// pre-LayerNorm blocks (causal multi-head attention, GELU tanh, residuals),
// final LayerNorm, lm head tied to wte over the padded vocabulary Vp. One arena
// each for parameters (checkpoint order), gradients, AdamW moments and
// activations; every GEMM through the Backend, every op timed by the Profiler.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "workloads/backend.h"
#include "workloads/gpt2/adamw.h"
#include "workloads/gpt2/config.h"
#include "workloads/gpt2/linear.h"
#include "workloads/gpt2/profiler.h"
#include "workloads/gpt2/tensor_table.h"

namespace flopwatt::gpt2 {

// Zero-filled, 64-byte aligned, huge-page advised storage that owns its memory.
template <typename E>
class Arena {
 public:
  Arena() = default;
  explicit Arena(std::int64_t n);
  E* data() const { return p_.get(); }
  std::int64_t size() const { return n_; }
  explicit operator bool() const { return bool(p_); }

 private:
  struct Free {
    void operator()(E* p) const;
  };
  std::unique_ptr<E, Free> p_;
  std::int64_t n_ = 0;
};

class Model {
 public:
  // gemm_dtype fp32: every GEMM in fp32. bf16: GEMM operands in bf16 (fp32
  // master weights, fp32 everything else). Parameters start zeroed.
  Model(const Config& c, Backend& backend, DType gemm_dtype);

  const Config& config() const { return cfg_; }
  DType gemm_dtype() const { return runner_.dtype(); }
  Backend& backend() { return runner_.backend(); }
  void set_profiler(Profiler* p);
  // The order of each linear layer's backward GEMMs (grad_order.h).
  void set_grad_order(GradOrder o, std::int64_t cache_bytes = 0, std::int64_t block_rows = 0) {
    runner_.set_grad_order(o, cache_bytes, block_rows);
  }
  GradOrder grad_order() const { return runner_.grad_order(); }

  // --- parameters, in llm.c's order -------------------------------------
  std::int64_t num_params() const { return playout_.total; }
  std::span<float> params() { return {params_.data(), std::size_t(playout_.total)}; }
  std::span<const float> grads() const { return {grads_.data(), grads_ ? std::size_t(playout_.total) : 0}; }
  float* param(ParamId id, int layer = 0) { return params_.data() + param_offset(id, layer); }
  float* grad(ParamId id, int layer = 0) { return grads_.data() + param_offset(id, layer); }
  std::int64_t param_offset(ParamId id, int layer = 0) const;
  std::int64_t param_size(ParamId id) const { return playout_.size[id]; }
  // GPT-2's init as llm.c's trainer: N(0, 0.02), residual projections scaled
  // by 1/sqrt(2L), LayerNorm weights 1, biases 0, padded vocabulary rows 0.
  // Deterministic for a seed, independent of the thread count.
  void init_random(std::uint64_t seed);
  // Reads an llm.c checkpoint of exactly this config (InputError otherwise).
  void load(const std::string& path);
  void save(const std::string& path, const std::string& flag = "--save") const;
  // Call after writing params() directly (refreshes the bf16 copy).
  void params_changed();

  // --- one training step (llm.c's order: forward, zero_grad, backward, update)
  // inputs, targets: (B,T) token ids < V; targets may be null (no loss).
  void forward(const int* inputs, const int* targets, int B, int T);
  float loss() const { return loss_; }            // mean over B*T; NaN when forward had no targets
  const float* logits() const;                    // (B,T,Vp); valid between forward and backward
  const float* activation(ActId id, int layer = 0) const;
  void zero_grad();
  void backward();
  void update(const AdamWConfig& c, int t);       // t counts from 1
  int batch() const { return B_; }
  int seq() const { return T_; }


 private:
  float* act(ActId id, int layer = 0) const;
  float* gact(GradActId id) const;
  const bf16_t* param16(ParamId id, int layer = 0) const;
  void ensure_activations(int B, int T);
  void ensure_grads();
  // forward()'s phases: the tokens checked into tokens_ (returns the targets'
  // copy), one transformer block (returns its output residual), the head and loss.
  const int* stage_tokens(const int* inputs, const int* targets, int N);
  float* block_forward(int l, const float* residual, int B, int T);
  void head_forward(const float* residual, const int* tg, bool with_targets, int B, int T);

  Config cfg_;
  GemmRunner runner_;
  Profiler* prof_ = nullptr;
  ArenaLayout playout_, alayout_, glayout_;
  Arena<float> params_, grads_, m_, v_, acts_, gacts_;
  Arena<bf16_t> params16_;
  Arena<int> tokens_;  // inputs then targets of the last forward
  int B_ = 0, T_ = 0;
  float loss_ = 0;
  bool have_targets_ = false, logits_valid_ = false;
  bool grads_fresh_ = true;  // after zero_grad: GEMM weight gradients are overwritten, not added to
};

}  // namespace flopwatt::gpt2
