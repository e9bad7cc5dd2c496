// The gradient-order section of `flopwatt report`: for `run gpt2` runs that
// record context.gpt2.grad_order, each linear layer's backward and the step,
// per run: the order each layer ran, the CPU traffic model's DRAM bytes, the
// measured (or, on a simulator, modelled) time, FLOP/s and FLOP/J, and the
// time against the standard-order run of the same backend; then the NPU
// fused-backward model's per-layer rows (context.gpt2.grad_order_npu_model,
// simulated runs only), standard vs the chosen order and partitioning.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/analysis/report.h"

namespace flopwatt {

// null when no run records a gradient order.
nlohmann::json grad_order_json(const std::vector<LoadedRun>& runs);
// "" when no run records a gradient order.
std::string grad_order_markdown(const std::vector<LoadedRun>& runs);

}  // namespace flopwatt
