#include "npu/sim/sim_backend.h"

#include <cstdlib>

#include <fmt/format.h>

#include "npu/sim/host_bandwidth.h"
#include "npu/sim/numerics.h"
#include "workloads/error.h"
#include "workloads/shapes.h"

namespace flopwatt::npu {

SimOptions sim_options_from_env(std::string* problems) {
  SimOptions o;
  auto env = [](const char* k) -> std::string {
    const char* v = std::getenv(k);
    return v ? v : "";
  };
  std::string bad;
  if (const auto v = env("FLOPWATT_NPU_TIMING_ONLY"); !v.empty()) o.timing_only = v != "0";
  if (const auto v = env("FLOPWATT_NPU_DESIGN"); !v.empty()) {
    if (v == "single") o.policy = DesignPolicy::Single;
    else if (v != "per-shape") bad += "FLOPWATT_NPU_DESIGN=" + v + " ignored (per-shape|single); ";
  }
  if (const auto v = env("FLOPWATT_NPU_RECONFIG"); !v.empty()) {
    if (v == "xclbin") o.reconfig = Reconfig::Xclbin;
    else if (v != "load_pdi") bad += "FLOPWATT_NPU_RECONFIG=" + v + " ignored (load_pdi|xclbin); ";
  }
  if (const auto v = env("FLOPWATT_NPU_HOST_GBS"); !v.empty()) {
    if (v == "device") o.host_copy_bytes_per_s = -1;
    else {
      char* end = nullptr;
      const double g = std::strtod(v.c_str(), &end);
      if (end && *end == 0 && g > 0) o.host_copy_bytes_per_s = g * 1e9;
      else bad += "FLOPWATT_NPU_HOST_GBS=" + v + " ignored (GB/s or 'device'); ";
    }
  }
  if (problems) *problems = bad;
  return o;
}

SimBackend::SimBackend(const std::string& device, SimOptions o) : device_name_(device), opts_(std::move(o)) {
  try {
    dev_ = load_device(device);
    residency_ = std::make_unique<DesignResidency>(*dev_, opts_.reconfig);
  } catch (const InputError& e) {
    unavailable_ = e.what();
  }
}

SimBackend::SimBackend(DeviceDesc dev, SimOptions o) : device_name_(dev.name), dev_(std::move(dev)), opts_(std::move(o)) {
  residency_ = std::make_unique<DesignResidency>(*dev_, opts_.reconfig);
}

Availability SimBackend::availability() const {
  if (dev_) return {true, ""};
  return {false, "device description not loaded: " + unavailable_};
}

const DeviceDesc& SimBackend::device() const {
  if (!dev_) throw InputError(name(), unavailable_);
  return *dev_;
}

bool SimBackend::supports(const GemmDesc& d) const {
  return dev_ && d.M > 0 && d.N > 0 && d.K > 0 && d.dtype_acc == DType::F32;
}

double SimBackend::host_copy_bytes_per_s() {
  if (opts_.host_copy_bytes_per_s > 0) return opts_.host_copy_bytes_per_s;
  if (opts_.host_copy_bytes_per_s == 0) {
    const double m = measured_host_copy_bytes_per_s();
    if (m > 0) return m;
  }
  return device().host_copy_bytes_per_s;
}

const Plan& SimBackend::plan_for(const GemmDesc& d) {
  const DeviceDesc& dev = device();
  const GemmProblem p{d.M, d.N, d.K, d.dtype_out};
  const std::string key = fmt::format("{}x{}x{}:{}", d.M, d.N, d.K, to_string(d.dtype_out));
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  Plan pl;
  if (opts_.policy == DesignPolicy::Single) {
    // Unless one was given, the design is chosen for GPT-2 124M's shapes, once
    // per output type (an fp32-output design needs more L1 than a bf16 one).
    if (!opts_.single) {
      auto it = chosen_single_.find(int(d.dtype_out));
      if (it == chosen_single_.end()) {
        const HostSide h{d.dtype_in, false, host_copy_bytes_per_s()};
        it = chosen_single_.emplace(int(d.dtype_out), choose_single_design(dev, gpt2_gemm_shapes(), d.dtype_out, h)).first;
      }
      pl = plan_single(dev, p, it->second);
    } else {
      pl = plan_single(dev, p, *opts_.single);
    }
  } else {
    pl = best_plan(dev, p);
  }
  return plans_.emplace(key, std::move(pl)).first->second;
}

void SimBackend::gemm(const GemmDesc& d, const void* A, const void* B, void* C) {
  if (!supports(d))
    throw InputError(name(), fmt::format("cannot run {}x{}x{} with {} accumulation", d.M, d.N, d.K, to_string(d.dtype_acc)),
                     dev_ ? "use fp32 accumulation and a non-empty shape" : unavailable_);
  const DeviceDesc& dev = *dev_;
  const Plan& pl = plan_for(d);
  const double reconf = residency_->switch_to(pl.design_key());
  if (!opts_.timing_only) simulate_gemm(d, A, B, C, pl.tile.k, pl.commands > 1 ? pl.k_chunk : 0);
  const HostSide host{d.dtype_in, d.beta != 0.0f, host_copy_bytes_per_s()};
  last_timing_ = model_time(dev, pl, host, reconf);
  last_energy_ = model_energy(dev, pl, *last_timing_);
}

std::optional<Breakdown> SimBackend::last_breakdown() const {
  if (!last_timing_) return std::nullopt;
  return last_timing_->breakdown();
}

std::optional<std::pair<std::string, double>> SimBackend::last_modelled_energy_j() const {
  if (!last_energy_) return std::nullopt;
  return std::make_pair("npu-model:" + device_name_, last_energy_->j);
}

std::optional<ModelledCeilings> SimBackend::modelled_ceilings() const {
  if (!dev_) return std::nullopt;
  const DeviceDesc& d = *dev_;
  ModelledCeilings c;
  c.peak_flop_per_s = d.peak_bf16_flop_per_s();
  c.dram_bytes_per_s = d.ddr_bytes_per_s;
  c.j_per_flop = d.pj_per_mac * 1e-12 / 2;  // a MAC is two FLOPs
  c.j_per_byte = d.pj_per_byte_ddr * 1e-12;
  c.static_w = d.static_w;
  return c;
}

std::vector<std::pair<std::string, std::string>> SimBackend::notes() const {
  std::vector<std::pair<std::string, std::string>> v;
  if (!dev_) return v;
  const DeviceDesc& d = *dev_;
  v.emplace_back("device file", d.file);
  v.emplace_back("array", fmt::format("{} ({}), {} cols x {} rows usable at {:.0f} MHz, peak bf16 {:.2f} TFLOP/s",
                                      d.name, d.generation, d.usable_columns, d.core_rows, d.clock_hz / 1e6,
                                      d.peak_bf16_flop_per_s() / 1e12));
  v.emplace_back("numerics", opts_.timing_only ? "skipped (timing only)"
                                               : "bf16 (RNE) inputs, fp32 accumulation per core tile, as the array");
  v.emplace_back("design", opts_.policy == DesignPolicy::Single ? "one design for all shapes (padded)"
                                                                : "one design per shape (best modelled tile)");
  v.emplace_back("reconfiguration", to_string(opts_.reconfig));
  std::string host;
  if (opts_.host_copy_bytes_per_s > 0) host = fmt::format("{:.1f} GB/s (set)", opts_.host_copy_bytes_per_s / 1e9);
  else if (opts_.host_copy_bytes_per_s < 0) host = fmt::format("{:.1f} GB/s (device file)", d.host_copy_bytes_per_s / 1e9);
  else if (const double m = measured_host_copy_bytes_per_s(); m > 0)
    host = fmt::format("{:.1f} GB/s (measured on this host: fp32->bf16 conversion, read+write bytes)", m / 1e9);
  else host = fmt::format("{:.1f} GB/s (device file; measuring failed)", d.host_copy_bytes_per_s / 1e9);
  v.emplace_back("host copy rate", host);
  v.emplace_back("energy", "modelled: source npu-model:" + d.name + " (domain npu, gauge, simulated)");
  if (!env_problems_.empty()) v.emplace_back("ignored settings", env_problems_);
  return v;
}

}  // namespace flopwatt::npu
