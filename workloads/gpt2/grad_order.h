// The order of a linear layer's two backward GEMMs, which both read dY = dout:
//   standard     dX = dY W over all N rows, then dW (+)= dY^T X over all N rows
//                (llm.c, PyTorch): dY crosses the memory hierarchy twice when
//                it does not fit in the last-level cache.
//   interleaved  rows of dY in blocks of `block_rows`: for each block,
//                dX[blk] = dY[blk] W, then dW += dY[blk]^T X[blk] while the
//                block is still in cache (Kim et al.'s dX-major order, fused
//                GEMM not partitioned). dY and X are read once; W is read and
//                dW read and written once per block.
//   auto         per layer, whichever of the two moves fewer modelled bytes
//                (cpu_backward_traffic below).
// The block is sized so that the dY and X rows of one block take half of the
// last-level cache, leaving the other half to the W and dW streams.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/gpt2/config.h"

namespace flopwatt::gpt2 {

enum class GradOrder { Standard, Interleaved, Auto };

const char* to_string(GradOrder o);
std::optional<GradOrder> parse_grad_order(std::string_view s);

// Bytes of cache the dY and X rows of one block may take: half the
// last-level cache of CPU 0 as sysfs below `root` describes it ("/", or the
// tree --sysfs-root names), 8 MiB when sysfs does not say.
std::int64_t default_block_cache_bytes(const std::string& root);

// Rows of dY per block: as many as let a block's dY and X rows fit in
// cache_bytes, at least 1, at most N.
std::int64_t block_rows_for(std::int64_t N, std::int64_t K, std::int64_t OC, std::int64_t elem_bytes,
                            std::int64_t cache_bytes);

// Modelled DRAM bytes of one linear backward (both GEMMs, not dbias) on a CPU
// with `cache_bytes` of cache for reuse. An operand is read from DRAM once per
// pass unless it was the last thing touched and still fits; results are fp32.
struct CpuBackwardTraffic {
  std::int64_t block_rows = 0;
  std::int64_t blocks = 0;
  double standard_bytes = 0;
  double interleaved_bytes = 0;
};
CpuBackwardTraffic cpu_backward_traffic(std::int64_t N, std::int64_t K, std::int64_t OC, std::int64_t elem_bytes,
                                        bool accumulate_dW, std::int64_t cache_bytes);

// What one linear backward runs.
struct LinearBackwardPlan {
  bool interleaved = false;
  std::int64_t block_rows = 0;  // rows of dY per block (N when not interleaved)
};
// block_rows_override > 0 forces the block size (tests: ragged last blocks).
LinearBackwardPlan plan_linear_backward(GradOrder o, std::int64_t N, std::int64_t K, std::int64_t OC,
                                        std::int64_t elem_bytes, bool accumulate_dW, std::int64_t cache_bytes,
                                        std::int64_t block_rows_override = 0);

// One linear layer's backward pair, dX(N,K) = dY(N,OC) W(OC,K) and
// dW(OC,K) += dY^T X(N,K), as model.cpp calls it.
struct LinearBackwardShape {
  std::string layer;  // "qkv", "attproj", "fc", "fcproj", "lm_head"
  std::int64_t N = 0, K = 0, OC = 0;
  int count_per_step = 0;
  double flop() const { return 4.0 * double(N) * double(K) * double(OC); }  // both GEMMs
};
// The five distinct backward pairs of a training step with `tokens` = B*T rows.
std::vector<LinearBackwardShape> linear_backward_shapes(const Config& c, std::int64_t tokens);

// What each of the model's linear backwards runs under order `o` at `tokens`
// rows (dW overwritten, as after zero_grad), with both orders' modelled bytes.
struct LayerBackwardChoice {
  LinearBackwardShape shape;
  LinearBackwardPlan plan;
  CpuBackwardTraffic traffic;
};
std::vector<LayerBackwardChoice> plan_model_backward(const Config& c, GradOrder o, std::int64_t tokens,
                                                     std::int64_t elem_bytes, std::int64_t cache_bytes);

}  // namespace flopwatt::gpt2
