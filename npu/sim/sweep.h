// The shape sweep report: the paper's two lessons in numbers.
//  1. Explicit data movement: per shape, how much of the call is host copies
//     and device transfers not hidden behind compute, versus compute.
//  2. Reconfiguration: one training step of GPT-2's GEMMs run with one design
//     per shape (reconfiguring whenever consecutive GEMMs differ) versus one
//     design for all shapes with padding.
// Timing only: nothing is computed, so 1,000 shapes take seconds.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "npu/plan/plan.h"
#include "npu/sim/residency.h"
#include "npu/sim/single_design.h"
#include "npu/sim/timing_model.h"
#include "workloads/shapes.h"

namespace flopwatt::npu {

struct SweepOptions {
  DType out = DType::F32;
  DType host_in = DType::F32;     // the caller's A and B
  double host_copy_bytes_per_s = 0;  // 0: the device file's value
};

struct SweepRow {
  std::string device, op, pass;
  GemmDesc desc;
  int count_per_step = 0;
  Plan plan;
  SimTiming timing;
  SimEnergy energy;
  double flop() const { return desc.flop(); }
  double transfer_share() const { return timing.total() > 0 ? timing.transfer() / timing.total() : 0; }
  double compute_share() const { return timing.total() > 0 ? timing.compute_only / timing.total() : 0; }
};

// Every shape with its own design, already loaded (no reconfiguration).
std::vector<SweepRow> sweep_shapes(const DeviceDesc& dev, const std::vector<GemmShape>& shapes, const SweepOptions& o);

// The GEMM calls of one training step in execution order (llm.c): forward
// per layer, the head, then backward in reverse, dinp before dweight.
std::vector<const GemmShape*> step_sequence(const std::vector<GemmShape>& shapes);

struct StrategyResult {
  std::string name;
  double time_s = 0, reconfigure_s = 0, copy_s = 0, device_s = 0, submit_s = 0, energy_j = 0;
  double macs_issued = 0, macs_useful = 0;
  int switches = 0, commands = 0, designs = 0;
};

struct StepComparison {
  std::string device;
  double flop = 0;  // useful FLOPs of the step's GEMMs
  SingleDesign single;
  // per-shape designs switched by load_pdi, in resident contexts, by a new
  // xclbin and context each time; one padded design for all.
  std::vector<StrategyResult> strategies;
};

StepComparison compare_step(const DeviceDesc& dev, const std::vector<GemmShape>& shapes, const SweepOptions& o);

// "random:N[:seed]" -> N shapes with M, N, K log-uniform in [16, 4096].
std::vector<GemmShape> random_shapes(int n, unsigned seed);

std::string format_sweep(const std::vector<SweepRow>& rows);
std::string format_comparison(const StepComparison& c);
nlohmann::json sweep_to_json(const std::vector<SweepRow>& rows, const std::vector<StepComparison>& cmp);
std::string sweep_to_csv(const std::vector<SweepRow>& rows);

}  // namespace flopwatt::npu
