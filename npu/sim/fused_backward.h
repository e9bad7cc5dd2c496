// A linear layer's backward pass as one fused operation on a scratchpad NPU:
//   dX(M,K) = dY(M,N) W(N,K)      dW(N,K) = dY^T X(M,K)
// (M tokens, N = output features, K = input features), in the orders of Kim,
// Na, Lee, Lee and Huh, "Improving Data Reuse in NPU On-chip Memory with
// Interleaved Gradient Order for DNN Training" (MICRO 2023):
//   standard           the two GEMMs one after the other, each output-
//                      stationary with the whole scratchpad; dY is read by both.
//   only-interleaving  both GEMMs at once, each keeping its own tile order on
//                      half of the scratchpad; their first sweeps over dY
//                      coincide, so one sweep is shared; no partial sums.
//   dx-major           tiles of dY in dX's order (row blocks outer), each loaded
//                      once and used for dX and dW; dW accumulates over row
//                      blocks, so its partial sums go back to DRAM between them.
//   dw-major           the mirror: column blocks of dY outer, dX partial sums.
// and the fused GEMM split over the device's cores along
//   m  token rows: every core reads all of W; the cores' dW are partial sums,
//   n  output features: every core reads all of X; dX partial sums,
//   k  input features: every core reads all of dY ("neither": no partial sums).
//
// The model is analytic (bytes are counted, not simulated cycle by cycle):
// per core, the tile sizes that minimize DRAM bytes under the scratchpad's
// capacity are searched; time is the roofline max(MACs at the effective rate,
// DRAM bytes at the DRAM rate), i.e. transfers overlap compute perfectly;
// energy is static power over that time plus per-MAC, per-DRAM-byte and
// per-scratchpad-byte energy (every DRAM byte is written into and read out of
// the scratchpad once). Operands are `operand_bytes` wide (bf16), partial sums
// and the gradients dX and dW are `psum_bytes` wide (fp32).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "npu/plan/device.h"
#include "npu/sim/calibration.h"

namespace flopwatt::npu {

// The memory hierarchy and rates the fused model needs. From an XDNA device
// file (one core per usable column, scratchpad = its memory tile plus its
// cores' data memories) or from a systolic-array file (devices/systolic/).
struct ScratchpadNpu {
  std::string name;
  std::string taken_from;           // whose configuration this is
  int cores = 1;
  int batch = 0;                    // the sequences per step its owners used (0: not given)
  std::int64_t scratchpad_bytes = 0;  // per core
  std::int64_t granule = 64;        // tile edges are multiples of this (PE array or kernel tile)
  double macs_per_s = 0;            // per core, effective
  double dram_bytes_per_s = 0;      // shared by the cores, read + write
  int operand_bytes = 2;
  int psum_bytes = 4;
  double static_w = 0, pj_per_mac = 0, pj_per_byte_dram = 0, pj_per_byte_sram = 0;
  std::string file;
  std::vector<PublishedFigure> published;  // systolic files: "peak_tflops" of the chip they stand for
};

// The modelled peak (all cores, 2 FLOP per MAC) against each published figure
// of a systolic file, within 15% or off by what the file states.
std::vector<CalibrationRow> calibrate_systolic(const ScratchpadNpu& dev);

ScratchpadNpu scratchpad_npu_from_xdna(const DeviceDesc& d);
// Reads a "flopwatt-npu-systolic/1" file; InputError naming the file and field.
ScratchpadNpu load_systolic_npu_file(const std::string& path);
// "xdna:<device>" or a systolic device name (devices/systolic/<name>.json).
ScratchpadNpu load_scratchpad_npu(const std::string& name);
// The systolic device names on the search path.
std::vector<std::string> systolic_npu_names();

enum class BwdOrder { Standard, OnlyInterleaving, DxMajor, DwMajor };
enum class BwdPartition { M, N, K };
const char* to_string(BwdOrder o);
const char* to_string(BwdPartition p);
inline constexpr BwdOrder kAllOrders[] = {BwdOrder::Standard, BwdOrder::OnlyInterleaving, BwdOrder::DxMajor,
                                          BwdOrder::DwMajor};
inline constexpr BwdPartition kAllPartitions[] = {BwdPartition::M, BwdPartition::N, BwdPartition::K};

struct BwdShape {
  std::int64_t M = 0, N = 0, K = 0;  // tokens, output features, input features
};

// DRAM bytes by operand. Reads of dY, X, W; the final writes of dX and dW;
// partial sums written back and read again beyond those.
struct BwdTraffic {
  double dY = 0, X = 0, W = 0, dX = 0, dW = 0;
  double psum_write = 0, psum_read = 0;
  bool feasible = true;  // false: the order's buffers do not fit the scratchpad (never chosen)
  double total() const { return dY + X + W + dX + dW + psum_write + psum_read; }
  BwdTraffic& operator+=(const BwdTraffic& o);
};

struct BwdResult {
  BwdOrder order = BwdOrder::Standard;
  BwdPartition partition = BwdPartition::M;
  BwdTraffic bytes;
  double macs = 0;
  double compute_s = 0, memory_s = 0, time_s = 0, energy_j = 0;
  std::int64_t tile_m = 0, tile_n = 0;  // one core's dY tile (dx-/dw-major) or output block (standard)
  double flop() const { return 2 * macs; }
};

// One core's traffic for the order on its share of the shape, with scratchpad bytes S.
BwdTraffic core_traffic(BwdOrder o, const BwdShape& s, std::int64_t S, std::int64_t granule, int e, int a,
                        std::int64_t* tile_m = nullptr, std::int64_t* tile_n = nullptr);

BwdResult model_backward(const ScratchpadNpu& dev, const BwdShape& s, BwdOrder o, BwdPartition p);
// The standard order's best partitioning (today's baseline) and the least
// modelled time over every order and partitioning (ties: less energy).
BwdResult best_standard(const ScratchpadNpu& dev, const BwdShape& s);
BwdResult choose_backward(const ScratchpadNpu& dev, const BwdShape& s);

// One output-stationary GEMM C(P,Q) = A(P,R) B(R,Q) (the forward linear layers).
BwdResult model_gemm(const ScratchpadNpu& dev, std::int64_t P, std::int64_t Q, std::int64_t R);
double roofline_seconds(const ScratchpadNpu& dev, double flop, double bytes);

// GPT-2 (llm.c's layout) on a modelled NPU: per linear layer the standard and
// the chosen backward, and one training step with and without the choice.
struct Gpt2Dims {
  int C = 768, L = 12, Vp = 50304;
  std::int64_t tokens = 0;  // B * T
};
struct OtherOp {  // a non-linear op of the step, as a roofline (occurrences folded in)
  std::string name;
  double flop = 0, bytes = 0;
  bool backward = false;  // part of the backward pass
};
struct Gpt2LayerRow {
  std::string layer;  // "qkv", "attproj", "fc", "fcproj", "lm_head"
  int count = 0;      // occurrences per step
  BwdShape shape;
  BwdResult standard, chosen;
};
struct Gpt2Step {
  std::vector<Gpt2LayerRow> layers;
  double forward_gemm_s = 0, other_s = 0, other_backward_s = 0;
  double backward_linear_standard_s = 0, backward_linear_chosen_s = 0;
  double step_standard_s = 0, step_chosen_s = 0;
  double step_standard_j = 0, step_chosen_j = 0;
  double backward_standard_s() const { return backward_linear_standard_s + other_backward_s; }
  double backward_chosen_s() const { return backward_linear_chosen_s + other_backward_s; }
};
Gpt2Step model_gpt2_step(const ScratchpadNpu& dev, const Gpt2Dims& g, const std::vector<OtherOp>& others);
// The per-layer table and the step summary, every figure labelled simulated.
std::string format_gpt2_step(const ScratchpadNpu& dev, const Gpt2Dims& g, const Gpt2Step& st);
nlohmann::json gpt2_step_to_json(const ScratchpadNpu& dev, const Gpt2Dims& g, const Gpt2Step& st);

}  // namespace flopwatt::npu
