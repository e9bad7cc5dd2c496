// "One design for all shapes": a single tile, column count and K per command
// compiled once, every GEMM padded to it. M and N only change the runtime
// sequence (instruction stream), which needs no reconfiguration; K is baked
// into the cores' loop count, so a longer K runs as several commands whose
// partial results the host adds, and a shorter K is padded with zeros.
#pragma once
#include <cstdint>
#include <vector>

#include "npu/plan/plan.h"
#include "npu/sim/timing_model.h"
#include "workloads/shapes.h"

namespace flopwatt::npu {

struct SingleDesign {
  TileShape tile;
  int cols = 0;
  std::int64_t k_chunk = 0;
};

Plan plan_single(const DeviceDesc& dev, const GemmProblem& p, const SingleDesign& s);

// The design with the shortest modelled total time (host copies, device,
// submits) over `shapes`, each weighted by its count per step (0 counts 1).
SingleDesign choose_single_design(const DeviceDesc& dev, const std::vector<GemmShape>& shapes, DType out,
                                  const HostSide& host);

}  // namespace flopwatt::npu
