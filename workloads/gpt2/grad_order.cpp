#include "workloads/gpt2/grad_order.h"

#include <algorithm>
#include <string>

#include "sysfs/files.h"

namespace flopwatt::gpt2 {

const char* to_string(GradOrder o) {
  switch (o) {
    case GradOrder::Standard: return "standard";
    case GradOrder::Interleaved: return "interleaved";
    case GradOrder::Auto: return "auto";
  }
  return "?";
}

std::optional<GradOrder> parse_grad_order(std::string_view s) {
  if (s == "standard") return GradOrder::Standard;
  if (s == "interleaved") return GradOrder::Interleaved;
  if (s == "auto") return GradOrder::Auto;
  return std::nullopt;
}

std::int64_t default_block_cache_bytes(const std::string& root) {
  std::int64_t best = 0;
  int best_level = 0;
  for (const auto& c : sysfs::cpu0_caches(root)) {
    if (c.type == "Instruction") continue;
    if (c.level >= best_level) {
      best_level = c.level;
      best = std::int64_t(c.bytes);
    }
  }
  return best > 0 ? best / 2 : std::int64_t(8) << 20;
}

std::int64_t block_rows_for(std::int64_t N, std::int64_t K, std::int64_t OC, std::int64_t elem_bytes,
                            std::int64_t cache_bytes) {
  const std::int64_t per_row = (K + OC) * elem_bytes;
  return std::clamp<std::int64_t>(cache_bytes / std::max<std::int64_t>(per_row, 1), 1, std::max<std::int64_t>(N, 1));
}

CpuBackwardTraffic cpu_backward_traffic(std::int64_t N, std::int64_t K, std::int64_t OC, std::int64_t elem_bytes,
                                        bool accumulate_dW, std::int64_t cache_bytes) {
  const double e = double(elem_bytes), n = double(N), k = double(K), oc = double(OC);
  const double dY = n * oc * e, X = n * k * e, W = oc * k * e, dX = n * k * 4, dW = oc * k * 4;
  CpuBackwardTraffic t;
  t.block_rows = block_rows_for(N, K, OC, elem_bytes, cache_bytes);
  t.blocks = (N + t.block_rows - 1) / t.block_rows;
  // Standard: the dW GEMM finds dY in cache only if all of it fits.
  const bool dY_stays = dY <= double(cache_bytes);
  t.standard_bytes = dY + W + dX + (dY_stays ? 0 : dY) + X + dW + (accumulate_dW ? dW : 0);
  // Interleaved: W and the dW partial sums stay only if both fit beside the block.
  const double b = double(t.blocks);
  const bool w_stays = W + dW <= double(cache_bytes);
  const double w_reads = w_stays ? 1 : b;
  const double dw_writes = w_stays ? 1 : b;
  const double dw_reads = (w_stays ? 0 : b - 1) + (accumulate_dW ? 1 : 0);
  t.interleaved_bytes = dY + X + dX + w_reads * W + dw_writes * dW + dw_reads * dW;
  return t;
}

LinearBackwardPlan plan_linear_backward(GradOrder o, std::int64_t N, std::int64_t K, std::int64_t OC,
                                        std::int64_t elem_bytes, bool accumulate_dW, std::int64_t cache_bytes,
                                        std::int64_t block_rows_override) {
  LinearBackwardPlan p;
  p.block_rows = N;
  if (o == GradOrder::Standard) return p;
  const CpuBackwardTraffic t = cpu_backward_traffic(N, K, OC, elem_bytes, accumulate_dW, cache_bytes);
  if (o == GradOrder::Auto && !(t.blocks > 1 && t.interleaved_bytes < t.standard_bytes)) return p;
  p.interleaved = true;
  p.block_rows = block_rows_override > 0 ? std::min<std::int64_t>(block_rows_override, std::max<std::int64_t>(N, 1))
                                         : t.block_rows;
  return p;
}

std::vector<LinearBackwardShape> linear_backward_shapes(const Config& c, std::int64_t tokens) {
  const std::int64_t C = c.C;
  return {{"qkv", tokens, C, 3 * C, c.L},
          {"attproj", tokens, C, C, c.L},
          {"fc", tokens, C, 4 * C, c.L},
          {"fcproj", tokens, 4 * C, C, c.L},
          {"lm_head", tokens, C, c.Vp, 1}};
}

std::vector<LayerBackwardChoice> plan_model_backward(const Config& c, GradOrder o, std::int64_t tokens,
                                                     std::int64_t elem_bytes, std::int64_t cache_bytes) {
  std::vector<LayerBackwardChoice> v;
  for (const auto& s : linear_backward_shapes(c, tokens))
    v.push_back({s, plan_linear_backward(o, s.N, s.K, s.OC, elem_bytes, false, cache_bytes),
                 cpu_backward_traffic(s.N, s.K, s.OC, elem_bytes, false, cache_bytes)});
  return v;
}

}  // namespace flopwatt::gpt2
