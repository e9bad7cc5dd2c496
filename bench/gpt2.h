// GPT-2 benchmarks for flopwatt_bench at B x T, per preset:
//   gpt2/<preset>/<backend>/step   a training step (forward, zero_grad, backward,
//                                  AdamW update) per GEMM backend;
//   gpt2/<preset>/op/<op>/<pass>   one occurrence of each op outside the GEMMs,
//                                  alone on its own buffers (the kernels run on
//                                  the host whatever the GEMM backend).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "bench/energy.h"
#include "harness/run/roofline.h"
#include "bench/gemm.h"
#include "workloads/dtype.h"

namespace flopwatt::gbench {

struct Gpt2BenchOptions {
  std::vector<std::string> presets = {"tiny", "d12"};
  std::string backends;  // empty: every available CPU backend but the oracle, and the NPU (device or simulator)
  int B = 4, T = 64;     // the study's configuration
  DType dtype = DType::F32;
  // The op table's names (op_info(op).name) whose gpt2/<preset>/op/ rows are
  // registered: "all", "none" or a list.
  std::string ops = "all";
  // This machine's stored ceilings (null: none): each host step gets a
  // `roof_fraction` counter, its roofline limit over its measured time, and
  // each op row one as the GEMM rows do, flagged above kRoofTolerance into
  // *above_roof.
  const RooflineSet* roofs = nullptr;
  std::vector<std::string>* above_roof = nullptr;
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
