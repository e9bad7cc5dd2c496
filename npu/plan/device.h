// A description of one XDNA device as the tiling plan and the simulator see
// it: array shape, clocks, compute rates, memory sizes, DMA channels and
// bandwidths, host-interface costs and power parameters. Loaded from a JSON
// file (npu/sim/devices/<name>.json) in which every parameter carries its
// value, unit, source and whether it is an assumption.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace flopwatt::npu {

// Where one parameter's value came from, for reports and `npu plan`.
struct ParamSource {
  std::string unit;
  std::string source;
  bool assumption = false;
  std::string note;
};

// One published figure a device file holds its model to, for the loaded
// variant: the model must come within 15% of it, or the file states the
// deviation and why (npu/sim/calibration.h computes and prints both).
struct PublishedFigure {
  std::string metric;  // "rated_int8_tops" | "best_bf16_gemm_tflops"
  double value = 0;    // in the metric's unit
  std::string source;
  bool deviation_stated = false;
  double deviation_pct = 0;  // (model / published - 1) * 100, as the file states it
  std::string why;
};

struct DeviceDesc {
  std::string name;        // "phoenix", "strix"
  std::string generation;  // "AIE2" | "AIE2P"
  std::string driver_id;   // "npu1", "npu4"
  std::string file;        // the file it was loaded from

  // Array
  int columns_total = 0;
  int first_usable_column = 0;
  int usable_columns = 0;
  int core_rows = 0;
  int mem_rows = 0;
  double clock_hz = 0;

  // Compute
  int bf16_macs_per_cycle = 0;        // per core
  int mmul_r = 0, mmul_s = 0, mmul_t = 0;  // bf16 micro-kernel shape
  double kernel_efficiency_64 = 0;    // achieved fraction of peak by the bf16 kernel at m=k=n=64
  double kernel_call_overhead_cycles = 0;  // per kernel invocation (locks, loop set-up)
  // int8 operations per cycle of one column, as the driver counts them for the
  // TOPS rating (0 when the file does not give it).
  double int8_ops_per_cycle_per_column = 0;

  // Memory
  std::int64_t l1_bytes = 0;           // data memory per core
  std::int64_t l1_reserved_bytes = 0;  // stack and runtime, not available to buffers
  std::int64_t l2_bytes = 0;           // per memory tile

  // DMA (bytes per AIE clock cycle per channel)
  double core_dma_bytes_per_cycle = 0;
  double memtile_dma_bytes_per_cycle = 0;
  int memtile_dma_channels = 0;        // per direction
  double shim_dma_bytes_per_cycle = 0;
  int shim_mm2s_channels = 0;          // DDR -> array, per column
  int shim_s2mm_channels = 0;          // array -> DDR, per column
  double ddr_bytes_per_s = 0;          // what the array can draw from DDR, read + write

  // Host interface
  double submit_latency_s = 0;         // one command, submit to completion seen by the host
  double reconfig_load_pdi_s = 0;      // switch design inside a context (in-sequence load_pdi)
  double reconfig_xclbin_s = 0;        // switch design by a new xclbin in a new hardware context
  int hwctx_limit = 0;
  double host_copy_bytes_per_s = 0;    // host read+write bytes/s when not measured

  // Power model
  double static_w = 0;                 // while a command is in flight
  double pj_per_mac = 0;
  double pj_per_byte_ddr = 0;
  double pj_per_byte_l2 = 0;
  double pj_per_byte_l1 = 0;

  std::map<std::string, ParamSource> sources;  // by parameter name
  std::string variant;                          // the clock variant loaded, empty for the base
  std::vector<PublishedFigure> published;       // the figures that apply to this variant

  double peak_bf16_flop_per_s() const {
    return 2.0 * double(bf16_macs_per_cycle) * usable_columns * core_rows * clock_hz;
  }
};

// Parses one device file, with one of its clock variants when `variant` is
// not empty (its name becomes "<name>-<variant>"); throws InputError naming
// the file and the field.
DeviceDesc load_device_file(const std::string& path, const std::string& variant = {});

// Opens and parses a device file and checks its "schema" string; throws
// InputError naming the file for each failure (shared by the XDNA and the
// systolic device files, whose fields differ).
nlohmann::json read_device_json(const std::string& path, const std::string& schema);

// The directories searched for device files, in order: $FLOPWATT_NPU_DEVICES,
// the source tree's npu/sim/devices (compile-time path), and the install
// location relative to the running binary (../share/flopwatt/npu/devices).
std::vector<std::string> device_search_dirs();
// Finds and loads <name>.json from the search path; throws InputError with the
// directories tried when absent.
DeviceDesc load_device(const std::string& name);
// Names of the devices found on the search path (file stems), sorted.
std::vector<std::string> available_device_names();

}  // namespace flopwatt::npu
