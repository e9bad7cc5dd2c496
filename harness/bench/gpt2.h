// GPT-2 training-step benchmarks for flopwatt_bench: gpt2/<preset>/<backend>/step
// (forward, zero_grad, backward, AdamW update at B x T) per preset and GEMM backend.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "harness/bench/energy.h"
#include "harness/run/roofline.h"
#include "harness/bench/gemm.h"
#include "workloads/dtype.h"

namespace flopwatt::gbench {

struct Gpt2BenchOptions {
  std::vector<std::string> presets = {"tiny", "d12"};
  std::string backends;  // empty: every available CPU backend but the oracle, and the NPU (device or simulator)
  int B = 4, T = 64;     // the study's configuration
  DType dtype = DType::F32;
  // This machine's stored ceilings (null: none): each host step gets a
  // `roof_fraction` counter, its roofline limit over its measured time.
  const RooflineSet* roofs = nullptr;
};

class Gpt2Benchmarks {
 public:
  Gpt2Benchmarks(EnergyMeter* meter, EnergyOptions eo);
  ~Gpt2Benchmarks();
  Registered register_all(const Gpt2BenchOptions& o);  // throws InputError for a bad preset or backend

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flopwatt::gbench
