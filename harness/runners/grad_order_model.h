// GPT-2's linear backwards in the interleaved gradient orders on a modelled
// NPU (npu/sim/fused_backward.h), with the rest of the step from the op table
// (workloads/gpt2/op_table.h) as rooflines: the join of the two libraries that
// `flopwatt npu fused-backward` and `run gpt2` on a simulator both use.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "npu/sim/fused_backward.h"
#include "workloads/gpt2/config.h"

namespace flopwatt {

npu::Gpt2Dims gpt2_npu_dims(const gpt2::Config& cfg, int B, int T);
npu::Gpt2Step model_gpt2_grad_order(const npu::ScratchpadNpu& dev, const gpt2::Config& cfg, int B, int T);

// The model's per-layer JSON (gpt2_step_to_json) for a simulator backend
// "npu:sim-<device>"; nullopt for any other backend.
std::optional<nlohmann::json> grad_order_npu_model_json(const std::string& backend, const gpt2::Config& cfg, int B,
                                                        int T);

}  // namespace flopwatt
