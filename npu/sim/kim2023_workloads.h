// The linear layers of the NLP and recommendation workloads Kim et al.
// (MICRO 2023) train with the interleaved gradient order, run through the
// fused backward model (npu/sim/fused_backward.h): per workload, the linear
// layers' training time (forward GEMMs plus backward) in the standard order
// and in the chosen order, next to the paper's mean training speedups.
#pragma once
#include <string>
#include <vector>

#include "npu/sim/fused_backward.h"

namespace flopwatt::npu {

struct KimLayer {
  std::string name;
  std::int64_t in = 0, out = 0;  // K (input features), N (output features)
  int count = 0;                 // occurrences per model
};

struct KimWorkload {
  std::string name;
  bool per_token = false;  // NLP: M = batch x sequence; recommendation: M = batch
  std::vector<KimLayer> layers;
  std::string source;      // where the layer sizes come from
};

const std::vector<KimWorkload>& kim2023_workloads();

struct KimWorkloadResult {
  std::string name;
  std::int64_t M = 0;
  double forward_s = 0, backward_standard_s = 0, backward_chosen_s = 0;
  double training_speedup() const { return (forward_s + backward_standard_s) / (forward_s + backward_chosen_s); }
  double backward_speedup() const { return backward_standard_s / backward_chosen_s; }
};

// seq: tokens per sequence of the NLP workloads (the paper's is not restated here).
std::vector<KimWorkloadResult> model_kim2023_workloads(const ScratchpadNpu& dev, int batch, int seq);
// The paper's mean training speedup on that device: +15% on the large NPU,
// +29% on the small one; 0 for a device the paper did not evaluate.
double kim2023_published_speedup(const std::string& device_name);
std::string format_kim2023(const ScratchpadNpu& dev, int batch, int seq, const std::vector<KimWorkloadResult>& rows);

}  // namespace flopwatt::npu
