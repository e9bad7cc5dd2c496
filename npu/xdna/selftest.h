// `flopwatt npu selftest`: one small design through every step of the real
// path - find the device, open it, create a hardware context, make buffers,
// flush them, submit, wait, read back - each timed, and the result checked
// against a reference GEMM on the same inputs, so a user with hardware
// validates the path in a minute and can attach the output to a bug report.
// Without a device (or designs) it stops at the first missing piece and says
// what it is and how to get it.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "npu/xdna/xdna_backend.h"

namespace flopwatt::npu::xdna {

struct SelftestStage {
  std::string name;    // discover, artifacts, open, load, context, buffers, sync, submit, wait, check
  double seconds = 0;
  bool ok = false;
  std::string detail;  // what was found or done; the error when !ok
};

struct SelftestReport {
  std::vector<SelftestStage> stages;
  // Set when a prerequisite is missing (no device, no permission, no designs):
  // the test could not run; the caller exits 2.
  std::string missing, fix;
  bool passed = false;  // every stage ok and the result within tolerance
  double rel_error = 0, tolerance = 0;
};

// The reference computes C = A B for a row-major bf16 A (M x K), B (K x N)
// into fp32 C, e.g. cpu:reference.
using ReferenceGemm = std::function<void(const GemmDesc& d, const void* A, const void* B, void* C)>;

// Runs the smallest design the manifest lists for the device.
SelftestReport run_selftest(const XdnaBackendConfig& cfg, const ReferenceGemm& reference);

}  // namespace flopwatt::npu::xdna
