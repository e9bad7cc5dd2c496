#include "harness/runners/grad_order_model.h"

#include "workloads/dtype.h"
#include "workloads/gpt2/op_table.h"

namespace flopwatt {

npu::Gpt2Dims gpt2_npu_dims(const gpt2::Config& cfg, int B, int T) {
  return {cfg.C, cfg.L, cfg.Vp, std::int64_t(B) * T};
}

npu::Gpt2Step model_gpt2_grad_order(const npu::ScratchpadNpu& dev, const gpt2::Config& cfg, int B, int T) {
  // Every op that is not a linear layer's GEMM, as a roofline of its FLOPs and
  // bytes (bf16 GEMM operands, as the NPU runs them).
  std::vector<npu::OtherOp> others;
  for (int i = 0; i < gpt2::kNumOps; ++i) {
    const auto op = gpt2::Op(i);
    const auto& info = gpt2::op_info(op);
    if (op == gpt2::Op::Data || info.gemm) continue;
    const auto cost = gpt2::op_cost(op, cfg, B, T, DType::BF16);
    const int n = gpt2::op_occurrences(op, cfg);
    others.push_back({info.name, n * cost.flop, n * cost.bytes, std::string(info.pass) == "bwd"});
  }
  return npu::model_gpt2_step(dev, gpt2_npu_dims(cfg, B, T), others);
}

std::optional<nlohmann::json> grad_order_npu_model_json(const std::string& backend, const gpt2::Config& cfg, int B,
                                                        int T) {
  const std::string prefix = "npu:sim-";
  if (backend.rfind(prefix, 0) != 0) return std::nullopt;
  const npu::ScratchpadNpu dev = npu::load_scratchpad_npu("xdna:" + backend.substr(prefix.size()));
  return npu::gpt2_step_to_json(dev, gpt2_npu_dims(cfg, B, T), model_gpt2_grad_order(dev, cfg, B, T));
}

}  // namespace flopwatt
