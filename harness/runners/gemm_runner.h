// The GEMM workload: for each shape and backend, verify once against
// cpu:reference, then time with rotated input buffers and join with energy.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "harness/run/counters.h"
#include "harness/run/energy.h"
#include "harness/runners/gemm_operands.h"
#include "harness/run/session.h"
#include "harness/run/timing.h"
#include "workloads/shapes.h"

namespace flopwatt {

struct GemmRunOptions {
  std::vector<GemmShape> shapes;
  DType dtype = DType::F32;
  TimingOptions timing;
  bool lengthen_for_gauges = true;      // the user did not fix --min-time
  std::optional<double> peak_flop_per_s;  // for fraction_of_peak
  RunCounters* counters = nullptr;       // hardware counters around each timed loop; null: none
  std::size_t rotate_bytes = 0;         // 0: twice the last-level cache (harness/runners/gemm_operands.h)
};

// A GEMM row's identity (op, backend, dtype, shape, FLOP, the bytes the
// backend's memory moves) and why it is skipped when the backend cannot run
// it: `run gemm` and flopwatt_bench place the same row on the roofline.
Measurement gemm_row(const GemmShape& shape, const GemmDesc& d, Backend& b);

// Called after each measurement (progress display); may be empty.
using MeasurementCallback = std::function<void(const Measurement&, std::size_t done, std::size_t total)>;

// Runs every (shape, backend) pair; unavailable or unsupported pairs become
// rows with `skipped` set. Stops early (leaving the session valid) when
// g_interrupted is set. Returns false when interrupted.
bool run_gemm_suite(const std::vector<Backend*>& backends, const GemmRunOptions& o, Session& session,
                    EnergyMeter& meter, const MeasurementCallback& on_measurement);

}  // namespace flopwatt
