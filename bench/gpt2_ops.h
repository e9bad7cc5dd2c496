// One non-GEMM op of a GPT-2 training step, on buffers of its own shaped as
// the model's at (config, B, T): what gpt2/<preset>/op/<op>/<pass> times, so
// an op's speed against its roof is measured outside a whole step.
#pragma once
#include <cstdint>
#include <memory>

#include "workloads/dtype.h"
#include "workloads/gpt2/config.h"
#include "workloads/gpt2/op_table.h"

namespace flopwatt::gbench {

// The ops benchmarked alone: every one outside the Backend's GEMMs but the
// batch loading, which is not a kernel.
bool gpt2_op_benchmarked(gpt2::Op op);

class Gpt2OpKernel {
 public:
  // Allocates and fills the op's operands (deterministic values); for a
  // backward op also runs the forward it reads (mean, rstd, att, lse).
  Gpt2OpKernel(gpt2::Op op, const gpt2::Config& c, int B, int T, DType dtype);
  ~Gpt2OpKernel();
  void run();           // one occurrence (one layer)
  bool finite() const;  // whether what run() rewrites in place is still finite

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flopwatt::gbench
