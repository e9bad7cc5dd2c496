// Backward-pair benchmarks for flopwatt_bench: gradorder/<backend>/<layer>/<order>
// runs one GPT-2 linear layer's backward (dX and dW from one dY) in the
// standard order (two whole GEMMs) and the interleaved one (blocks of dY rows
// feed both while cached; workloads/gpt2/grad_order.h), side by side, with
// the CPU traffic model's DRAM bytes as a counter.
#pragma once
#include <memory>
#include <string>

#include "bench/energy.h"
#include "bench/gemm.h"
#include "workloads/dtype.h"

namespace flopwatt::gbench {

struct GradOrderBenchOptions {
  std::string model = "d12";  // GPT-2 preset whose linear layers give the shapes
  std::int64_t tokens = 4096;  // rows of dY: B*T, llm.c's default 4 x 1024
  std::string backends;        // empty: every available backend but the naive oracle
  DType dtype = DType::F32;
};

// Counter names beyond energy.h's.
inline constexpr const char* kModelBytes = "model_DRAM_bytes";  // per iteration, CPU traffic model
inline constexpr const char* kBlockRows = "block_rows";          // rows of dY per block (N: one block)
inline constexpr const char* kAutoPicks = "auto_picks";          // 1 on the order `--grad-order auto` runs

class GradOrderBenchmarks {
 public:
  GradOrderBenchmarks(EnergyMeter* meter, EnergyOptions eo);
  ~GradOrderBenchmarks();
  Registered register_all(const GradOrderBenchOptions& o);  // throws InputError for a bad preset or backend

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flopwatt::gbench
