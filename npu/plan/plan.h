// The tiling plan of one GEMM on an XDNA array, as data: the per-core tile,
// the micro-kernel, the array mapping of IRON's whole-array GEMM, the padding
// and every DMA transfer per memory level with its byte count. The simulator
// derives time and energy from it; the real backend uses it to pick a design.
//
// Mapping (IRON programming_examples/basic/matrix_multiplication/whole_array):
// `rows` x `cols` cores; core (r, c) owns an m x n tile of C and loops over K
// in steps of k. Per step, A's rows*m x k slab comes from DDR through
// a_channels = min(cols, rows) memory tiles, is split into one m x k tile per
// row and broadcast along that row; B's k x n tile per column comes through
// that column's memory tile and is forwarded down its rows. C tiles are joined
// rows -> 1 per column in the memory tile and written back. All FIFOs are
// double-buffered, so L1 holds 2(mk + kn) inputs and 2mn outputs.
//
// Letters: M, N, K the problem; Mp, Np, Kp padded; m, k, n the core tile;
// r, s, t the micro-kernel (4x8x4 on AIE2, 4x8x8 on AIE2P).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "npu/plan/device.h"
#include "workloads/dtype.h"

namespace flopwatt::npu {

// Inputs always travel as bf16 on the array; the output is fp32 or bf16.
struct GemmProblem {
  std::int64_t M = 0, N = 0, K = 0;
  DType out = DType::F32;
};

struct TileShape {
  int m = 0, k = 0, n = 0;
  bool operator==(const TileShape&) const = default;
};

// One kind of DMA transfer of one command set: `count` transfers of
// `tile_bytes` each, spread over `channels` parallel channels; each transfer
// is delivered to `fanout` destinations (stream broadcast), so the bytes
// written at the destination level are bytes() * fanout.
struct Transfer {
  std::string level;    // "ddr->l2", "l2->l1", "l1->l2", "l2->ddr"
  char operand = 'A';   // 'A', 'B', 'C'
  std::string pattern;  // how IRON moves it
  std::int64_t tile_bytes = 0;
  std::int64_t count = 0;
  int channels = 1;
  int fanout = 1;
  double bytes() const { return double(tile_bytes) * double(count); }
  double delivered_bytes() const { return bytes() * fanout; }
};

struct Plan {
  std::string device;
  GemmProblem problem;
  std::int64_t Mp = 0, Np = 0, Kp = 0;
  TileShape tile;
  int r = 0, s = 0, t = 0;
  int rows = 0, cols = 0, a_channels = 0;
  std::int64_t k_chunk = 0;    // K handled by one command (== Kp for a per-shape design)
  std::int64_t commands = 0;   // Kp / k_chunk; partial sums of several commands are added on the host
  std::int64_t tiles_m = 0;    // Mp / (rows * m): output super-tiles along M
  std::int64_t tiles_n = 0;    // Np / (cols * n)
  std::int64_t k_steps = 0;    // k_chunk / k per super-tile and command
  std::int64_t l1_bytes = 0;   // per core, buffers only
  std::int64_t l2_bytes = 0;   // per memory tile, the fullest one
  std::vector<Transfer> transfers;  // totals over all commands

  double macs_useful() const { return double(problem.M) * double(problem.N) * double(problem.K); }
  double macs_issued() const { return double(Mp) * double(Np) * double(Kp); }
  double ddr_bytes() const;             // read + written at DDR
  double level_bytes(const std::string& level) const;
  // Identity of the loaded design: two GEMMs with the same key run without reconfiguring.
  std::string design_key() const;
  std::string describe() const;         // the multi-line table `flopwatt npu plan` prints
  nlohmann::json to_json() const;
};

// Bytes of L1 the double-buffered tiles need (without the reserve).
std::int64_t l1_buffer_bytes(const TileShape& t, DType out);
// Bytes of the fullest memory tile.
std::int64_t l2_buffer_bytes(const TileShape& t, int rows, int cols, DType out);
// Empty when the design is legal on the device, else why not.
std::string check_design(const DeviceDesc& dev, const TileShape& t, int cols, DType out);

// Builds the plan for a fixed design. k_chunk 0 means one command over all of K
// (K padded to a multiple of k); otherwise k_chunk must be a multiple of k.
// Throws InputError when the design does not fit or the shape is empty.
Plan make_plan(const DeviceDesc& dev, const GemmProblem& p, const TileShape& t, int cols, std::int64_t k_chunk = 0);

struct DesignChoice {
  TileShape tile;
  int cols = 0;
};
// Every legal (tile, cols) on the device for this output type; cached per call site.
std::vector<DesignChoice> candidate_designs(const DeviceDesc& dev, DType out);

// The candidate with the lowest cost (ties: fewer issued MACs, then larger tile).
using PlanCost = std::function<double(const Plan&)>;
Plan choose_plan(const DeviceDesc& dev, const GemmProblem& p, const PlanCost& cost);
// A cost without a timing model: issued MACs at peak plus DDR bytes at the DDR cap.
double proxy_cost(const DeviceDesc& dev, const Plan& plan);

}  // namespace flopwatt::npu
