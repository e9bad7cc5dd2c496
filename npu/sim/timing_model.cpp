#include "npu/sim/timing_model.h"

#include <algorithm>

namespace flopwatt::npu {

namespace {

constexpr double kBf16 = 2.0;

// Efficiency of the kernel's inner loop, such that a 64^3 call including the
// fixed call overhead takes exactly 64^3 / (MAC/cycle * kernel_efficiency_64).
double inner_efficiency(const DeviceDesc& dev) {
  const double ideal = 64.0 * 64.0 * 64.0 / dev.bf16_macs_per_cycle;
  const double measured = ideal / dev.kernel_efficiency_64;
  const double inner = measured - dev.kernel_call_overhead_cycles;
  return inner > ideal ? ideal / inner : 1.0;
}

struct CommandCycles {
  double total = 0, compute_only = 0, step = 0;
  const char* bound = "compute";
};

CommandCycles command_cycles(const DeviceDesc& dev, const Plan& p) {
  const double m = p.tile.m, k = p.tile.k, n = p.tile.n;
  const double ob = double(dtype_size(p.problem.out));
  const double rows = p.rows, cols = p.cols;
  const double rows_per_a = rows / p.a_channels;
  const double ddr_bpc = dev.ddr_bytes_per_s / dev.clock_hz;

  const double kern = kernel_cycles(dev, p.tile);
  const double l1 = std::max(m * k, k * n) * kBf16 / dev.core_dma_bytes_per_cycle;
  const double shim = std::max(rows_per_a * m * k, k * n) * kBf16 / dev.shim_dma_bytes_per_cycle;
  const double c_super_bytes = rows * cols * m * n * ob;  // written per super-tile
  const double ddr = ((rows * m * k + cols * k * n) * kBf16 + c_super_bytes / double(p.k_steps)) / ddr_bpc;

  CommandCycles c;
  c.step = kern;
  if (l1 > c.step) c.step = l1, c.bound = "l1-dma";
  if (shim > c.step) c.step = shim, c.bound = "shim-dma";
  if (ddr > c.step) c.step = ddr, c.bound = "ddr";

  // A C tile leaves its core, is joined per column and goes out through the shim.
  const double drain = std::max(m * n * ob / dev.core_dma_bytes_per_cycle, rows * m * n * ob / dev.shim_dma_bytes_per_cycle);
  const double super = std::max(double(p.k_steps) * c.step, drain);
  const double fill = shim + l1;  // the first tiles cross DDR->L2->L1 before any compute
  const double supers = double(p.tiles_m) * double(p.tiles_n);
  c.total = supers * super + fill + drain;
  c.compute_only = supers * double(p.k_steps) * kern;
  return c;
}

}  // namespace

double kernel_cycles(const DeviceDesc& dev, const TileShape& t) {
  const double macs = double(t.m) * t.k * t.n;
  return macs / (dev.bf16_macs_per_cycle * inner_efficiency(dev)) + dev.kernel_call_overhead_cycles;
}

double device_seconds(const DeviceDesc& dev, const Plan& p) {
  return double(p.commands) * command_cycles(dev, p).total / dev.clock_hz;
}

SimTiming model_time(const DeviceDesc& dev, const Plan& p, const HostSide& host, double reconfigure_s) {
  SimTiming t;
  const CommandCycles c = command_cycles(dev, p);
  t.device = double(p.commands) * c.total / dev.clock_hz;
  t.compute_only = double(p.commands) * c.compute_only / dev.clock_hz;
  t.peak_bound = 2.0 * p.macs_issued() / dev.peak_bf16_flop_per_s();
  t.step_cycles = c.step;
  t.bound = c.bound;

  const double M = double(p.problem.M), N = double(p.problem.N), K = double(p.problem.K);
  const double in_host = double(dtype_size(host.a_b_host));
  const double ob = double(dtype_size(p.problem.out));
  // A and B: read the caller's elements, write padded bf16 device buffers.
  const double bytes_in = (M * K + K * N) * in_host + (double(p.Mp) * p.Kp + double(p.Kp) * p.Np) * kBf16;
  // C: read every command's padded result; with several commands the partial
  // sums are accumulated in fp32 (read + write per extra command); write C,
  // reading the old C first when beta != 0.
  double bytes_out = double(p.commands) * double(p.Mp) * p.Np * ob + M * N * ob;
  if (p.commands > 1) bytes_out += double(p.commands - 1) * M * N * 4.0 * 2.0;
  if (host.beta_nonzero) bytes_out += M * N * ob;
  const double bw = host.copy_bytes_per_s > 0 ? host.copy_bytes_per_s : dev.host_copy_bytes_per_s;
  t.copy_in = bytes_in / bw;
  t.copy_out = bytes_out / bw;
  t.host_bytes = bytes_in + bytes_out;
  t.submit = double(p.commands) * dev.submit_latency_s;
  t.reconfigure = reconfigure_s;
  return t;
}

SimEnergy model_energy(const DeviceDesc& dev, const Plan& p, const SimTiming& t) {
  SimEnergy e;
  const double pj = 1e-12;
  e.static_j = dev.static_w * (t.device + t.submit + t.reconfigure);
  e.mac_j = p.macs_issued() * dev.pj_per_mac * pj;
  e.ddr_j = p.ddr_bytes() * dev.pj_per_byte_ddr * pj;
  // Memory tiles: written from DDR and by the cores, read towards the cores and DDR.
  const double l2 = p.level_bytes("ddr->l2") + p.level_bytes("l1->l2") + p.level_bytes("l2->l1") + p.level_bytes("l2->ddr");
  e.l2_j = l2 * dev.pj_per_byte_l2 * pj;
  double l1 = 0;
  for (const auto& x : p.transfers)
    if (x.level == "l2->l1") l1 += x.delivered_bytes();
    else if (x.level == "l1->l2") l1 += x.bytes();
  e.l1_j = l1 * dev.pj_per_byte_l1 * pj;
  e.j = e.static_j + e.mac_j + e.ddr_j + e.l2_j + e.l1_j;
  e.avg_power_w = t.total() > 0 ? e.j / t.total() : 0;
  return e;
}

Plan best_plan(const DeviceDesc& dev, const GemmProblem& problem) {
  // Padding also costs host copies, so designs are compared on the whole call.
  const HostSide host{DType::F32, false, dev.host_copy_bytes_per_s};
  return choose_plan(dev, problem, [&](const Plan& p) { return model_time(dev, p, host, 0.0).total(); });
}

}  // namespace flopwatt::npu
