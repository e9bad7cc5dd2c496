// Backends npu:sim-<device>: the modelled XDNA array. gemm() computes the
// result as the hardware would (npu/sim/numerics.h) and derives the call's
// time and energy from its tiling plan (npu/sim/timing_model.h); the harness
// reports those modelled figures, labelled simulated.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "npu/plan/device.h"
#include "npu/plan/plan.h"
#include "npu/sim/residency.h"
#include "npu/sim/single_design.h"
#include "npu/sim/timing_model.h"
#include "workloads/backend.h"

namespace flopwatt::npu {

enum class DesignPolicy { PerShape, Single };

struct SimOptions {
  bool timing_only = false;                  // skip the numerics (C is left untouched)
  DesignPolicy policy = DesignPolicy::PerShape;
  Reconfig reconfig = Reconfig::LoadPdi;
  double host_copy_bytes_per_s = 0;          // 0: measure this host once
  std::optional<SingleDesign> single;        // policy Single; unset: chosen for GPT-2 124M
};

// Reads FLOPWATT_NPU_TIMING_ONLY (1), FLOPWATT_NPU_DESIGN (per-shape|single),
// FLOPWATT_NPU_RECONFIG (load_pdi|xclbin), FLOPWATT_NPU_HOST_GBS (number or
// "device"); unknown values are ignored and reported in notes().
SimOptions sim_options_from_env(std::string* problems = nullptr);

class SimBackend : public Backend {
 public:
  // Loads <device>.json from the device search path; a failure makes the
  // backend unavailable with the reason (probing never throws).
  explicit SimBackend(const std::string& device, SimOptions o = {});
  SimBackend(DeviceDesc dev, SimOptions o);

  std::string name() const override { return "npu:sim-" + device_name_; }
  Availability availability() const override;
  bool supports(const GemmDesc& d) const override;
  void gemm(const GemmDesc& d, const void* A, const void* B, void* C) override;
  bool simulated() const override { return true; }
  // The array multiplies bf16 whatever the host hands it (fp32 is rounded on the way in).
  DType compute_dtype(const GemmDesc&) const override { return DType::BF16; }
  std::optional<Breakdown> last_breakdown() const override;
  std::optional<std::pair<std::string, double>> last_modelled_energy_j() const override;
  std::vector<std::pair<std::string, std::string>> notes() const override;
  // bf16 peak, DDR rate, pJ per MAC (2 FLOP) and per DDR byte, static power.
  std::optional<ModelledCeilings> modelled_ceilings() const override;

  void set_timing_only(bool on) { opts_.timing_only = on; }
  const DeviceDesc& device() const;  // throws InputError when unavailable
  const SimOptions& options() const { return opts_; }
  // The plan gemm() would use for d (cached per shape).
  const Plan& plan_for(const GemmDesc& d);
  // Last call's details.
  const std::optional<SimTiming>& last_timing() const { return last_timing_; }
  const std::optional<SimEnergy>& last_energy() const { return last_energy_; }
  void set_ignored_settings(std::string s) { env_problems_ = std::move(s); }
  double host_copy_bytes_per_s();

 private:
  std::string device_name_;
  std::optional<DeviceDesc> dev_;
  std::string unavailable_;
  std::string env_problems_;
  SimOptions opts_;
  std::unique_ptr<DesignResidency> residency_;
  std::map<std::string, Plan> plans_;
  std::map<int, SingleDesign> chosen_single_;  // by output type, when opts_.single is unset
  std::optional<SimTiming> last_timing_;
  std::optional<SimEnergy> last_energy_;
};

}  // namespace flopwatt::npu
