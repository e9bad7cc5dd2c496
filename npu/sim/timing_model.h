// Time and energy of one GEMM on a modelled XDNA array, derived from its
// tiling plan (npu/plan/plan.h) and the device description.
//
// Device time per command, in AIE cycles:
//   kernel(m,k,n) = m*k*n / (MAC/cycle * e) + call overhead, with e chosen so
//                   that kernel(64,64,64) reproduces the published efficiency;
//   step          = max(kernel, L1 DMA of A and of B, shim DMA of A and of B,
//                       the step's DDR bytes at the measured DDR rate)
//                   -- double buffering overlaps a step's transfers with the
//                   previous step's compute, so the slowest resource sets it;
//   super-tile    = max(k_steps * step, draining the previous C tile);
//   command       = super-tiles * super-tile + pipeline fill + last drain.
// Around it the host converts and copies A and B into device buffers and C
// back (bytes at the host's copy rate), each command costs the measured
// submit-to-completion latency, and a design change costs a reconfiguration.
// Energy: static power while a command is in flight, plus per MAC and per
// byte at DDR, memory tile and core memory.
// Which published figures this reproduces, and how closely, is listed in each
// device file's "calibration" entries (pinned by tests/npu/sim/calibration_test.cpp).
#pragma once
#include <string>

#include "npu/plan/plan.h"
#include "workloads/backend.h"

namespace flopwatt::npu {

// What the host does around the device command.
struct HostSide {
  DType a_b_host = DType::F32;  // element type of the caller's A and B
  bool beta_nonzero = false;    // C is read back and blended on the host
  double copy_bytes_per_s = 0;  // host read + write bytes per second
};

struct SimTiming {
  double copy_in = 0, copy_out = 0, submit = 0, reconfigure = 0;
  double device = 0;        // command execution: compute and DMA, overlapped
  double compute_only = 0;  // the cores' kernel time alone
  double peak_bound = 0;    // issued MACs at the device's peak rate (a lower bound of device)
  double step_cycles = 0;
  std::string bound;        // what limits a step: "compute", "l1-dma", "shim-dma", "ddr"
  double host_bytes = 0;    // bytes the host read and wrote for copies

  double total() const { return copy_in + device + copy_out + submit + reconfigure; }
  // Explicit data movement: host copies plus device time not hidden behind compute.
  double transfer() const { return copy_in + copy_out + (device - compute_only); }
  Breakdown breakdown() const { return {copy_in, device, copy_out, submit, reconfigure}; }
};

struct SimEnergy {
  double j = 0, avg_power_w = 0;
  double static_j = 0, mac_j = 0, ddr_j = 0, l2_j = 0, l1_j = 0;
};

// Cycles of one kernel call on an m x k x n tile.
double kernel_cycles(const DeviceDesc& dev, const TileShape& t);
// Device execution seconds of all the plan's commands (no host copies, no submit).
double device_seconds(const DeviceDesc& dev, const Plan& plan);

SimTiming model_time(const DeviceDesc& dev, const Plan& plan, const HostSide& host, double reconfigure_s);
SimEnergy model_energy(const DeviceDesc& dev, const Plan& plan, const SimTiming& t);

// The per-shape design the simulator and `flopwatt npu plan` use: the legal
// tile and column count with the shortest modelled call (host copies at the
// device file's host rate, device time, submit).
Plan best_plan(const DeviceDesc& dev, const GemmProblem& p);

}  // namespace flopwatt::npu
