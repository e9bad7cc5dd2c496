// The op interface every compute backend implements: a row-major GEMM
//   C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C
// with op(X) = X^T when trans_x. Leading dimensions of 0 mean "tightly packed"
// (lda = trans_a ? M : K, ldb = trans_b ? K : N, ldc = N).
// A and B are dtype_in (float or bf16_t), C is dtype_out; accumulation is dtype_acc.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "workloads/dtype.h"

namespace flopwatt {

struct GemmDesc {
  std::int64_t M = 0, N = 0, K = 0;
  bool trans_a = false, trans_b = false;
  DType dtype_in = DType::F32, dtype_acc = DType::F32, dtype_out = DType::F32;
  float alpha = 1.0f, beta = 0.0f;
  std::int64_t lda = 0, ldb = 0, ldc = 0;

  std::int64_t eff_lda() const { return lda ? lda : (trans_a ? M : K); }
  std::int64_t eff_ldb() const { return ldb ? ldb : (trans_b ? K : N); }
  std::int64_t eff_ldc() const { return ldc ? ldc : N; }
  // 2*M*N*K multiply-adds, plus M*N for the beta update when beta != 0.
  double flop() const { return 2.0 * double(M) * double(N) * double(K) + (beta != 0.0f ? double(M) * double(N) : 0.0); }
  // Compulsory traffic: A and B read once, C written once (and read first when
  // beta != 0): the bytes of a GEMM's arithmetic intensity.
  double operand_bytes() const {
    const double in = double(dtype_size(dtype_in)), out = double(dtype_size(dtype_out));
    return in * (double(M) * double(K) + double(K) * double(N)) + out * double(M) * double(N) * (beta != 0.0f ? 2 : 1);
  }
  std::string layout() const { return std::string(trans_a ? "T" : "N") + (trans_b ? "T" : "N"); }
};

// Where a backend's time went for its last call (device backends; seconds).
struct Breakdown {
  double copy_in = 0, compute = 0, copy_out = 0, submit = 0, reconfigure = 0;
};

// A modelled device's ceilings, as its model states them: the peak, the DRAM
// rate its array draws at, and the energy charged per FLOP, per DRAM byte and
// per second while a command is in flight (the model's on-chip memory energy
// is not in these three).
struct ModelledCeilings {
  double peak_flop_per_s = 0, dram_bytes_per_s = 0;
  double j_per_flop = 0, j_per_byte = 0, static_w = 0;
};

struct Availability {
  bool ok = false;
  std::string reason;  // why not, and the fix; empty when ok
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;          // "cpu:openblas", "npu:sim-phoenix"
  virtual Availability availability() const = 0;  // probed, never throws
  virtual bool supports(const GemmDesc& d) const = 0;
  // Runs the GEMM on host pointers; a device backend's own copies are part of its cost.
  virtual void gemm(const GemmDesc& d, const void* A, const void* B, void* C) = 0;
  // Called once per (shape, B operand) outside the timed loop; backends may pack weights here.
  // The default does nothing; a backend that packs must say so in notes().
  virtual void prepare(const GemmDesc& d, const void* B) {}
  virtual bool simulated() const { return false; }
  // The precision the backend really multiplies in (an NPU rounds fp32 inputs to
  // bf16); verification uses this dtype's tolerance.
  virtual DType compute_dtype(const GemmDesc& d) const { return d.dtype_in; }
  virtual std::optional<Breakdown> last_breakdown() const { return std::nullopt; }
  // A modelled device's energy for its last call: {source id "npu-model:<device>", joules}.
  virtual std::optional<std::pair<std::string, double>> last_modelled_energy_j() const { return std::nullopt; }
  // Simulated backends: the device model's ceilings, for the roofline.
  virtual std::optional<ModelledCeilings> modelled_ceilings() const { return std::nullopt; }
  // Free-form facts for the report context (library version, threading, packing choices).
  virtual std::vector<std::pair<std::string, std::string>> notes() const { return {}; }
};

}  // namespace flopwatt
