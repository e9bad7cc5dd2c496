#include "npu/sim/calibration.h"

#include <fmt/core.h>

#include "npu/sim/timing_model.h"

namespace flopwatt::npu {

namespace {

// The TOPS rating counts every column (the driver's first column included) at
// the int8 rate, so the modelled bf16 peak of the usable columns is scaled by
// both ratios; a wrong clock, column count or MAC rate shows up here.
CalibrationRow rated_int8(const DeviceDesc& dev, const PublishedFigure& f) {
  CalibrationRow r;
  r.figure = f;
  const double bf16_flop_per_core = 2.0 * dev.bf16_macs_per_cycle;
  const double int8_ops_per_core = dev.int8_ops_per_cycle_per_column / dev.core_rows;
  r.model = dev.peak_bf16_flop_per_s() * (double(dev.columns_total) / dev.usable_columns) *
            (int8_ops_per_core / bf16_flop_per_core) / 1e12;
  r.detail = fmt::format("{} columns x {:.0f} int8 ops/cycle at {:.0f} MHz; modelled bf16 peak {:.2f} TFLOP/s on {} usable columns",
                         dev.columns_total, dev.int8_ops_per_cycle_per_column, dev.clock_hz / 1e6,
                         dev.peak_bf16_flop_per_s() / 1e12, dev.usable_columns);
  return r;
}

// As the published figures were measured: the best design for a large GEMM
// with bf16 output, timed from submission to completion (device time plus one
// command's latency), the operands already in device buffers.
CalibrationRow best_gemm(const DeviceDesc& dev, const PublishedFigure& f) {
  CalibrationRow r;
  r.figure = f;
  const GemmProblem p{4096, 4096, 4096, DType::BF16};
  const Plan best = choose_plan(dev, p, [&](const Plan& x) { return device_seconds(dev, x); });
  const double flop = 2.0 * best.macs_useful();
  const double dev_s = device_seconds(dev, best);
  r.model = flop / (dev_s + dev.submit_latency_s) / 1e12;
  r.device_only = flop / dev_s / 1e12;
  const SimTiming t = model_time(dev, best, {DType::F32, false, dev.host_copy_bytes_per_s}, 0.0);
  r.end_to_end = flop / t.total() / 1e12;
  r.detail = fmt::format("4096^3 bf16 out, tile m={} k={} n={} on {} columns, {}-bound; device alone {:.2f}, "
                         "with submit {:.2f}, end to end with fp32 host copies at {:.0f} GB/s {:.2f} TFLOP/s",
                         best.tile.m, best.tile.k, best.tile.n, best.cols, t.bound, r.device_only, r.model,
                         dev.host_copy_bytes_per_s / 1e9, r.end_to_end);
  return r;
}

}  // namespace

std::vector<CalibrationRow> calibrate(const DeviceDesc& dev) {
  std::vector<CalibrationRow> rows;
  for (const auto& f : dev.published) {
    CalibrationRow r = f.metric == "rated_int8_tops" ? rated_int8(dev, f) : best_gemm(dev, f);
    r.deviation_pct = (r.model / f.value - 1.0) * 100.0;
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<std::string> describe_calibration(const DeviceDesc& dev, const std::vector<CalibrationRow>& rows) {
  std::vector<std::string> out;
  if (rows.empty()) {
    out.push_back(fmt::format("{}: no published figure in {}; the model is unchecked", dev.name, dev.file));
    return out;
  }
  for (const auto& r : rows) {
    const char* unit = r.figure.metric == "rated_int8_tops" ? "TOPS int8" : "TFLOP/s bf16";
    std::string verdict;
    if (r.within_tolerance()) verdict = "within 15%";
    else if (r.accounted_for()) verdict = fmt::format("NOT within 15% (file states {:+.1f}%)", r.figure.deviation_pct);
    else if (r.figure.deviation_stated)
      verdict = fmt::format("NOT within 15%, and not the {:+.1f}% the file states: update {}", r.figure.deviation_pct, dev.file);
    else verdict = fmt::format("NOT within 15%, and the file gives no reason: add a deviation to {}", dev.file);
    out.push_back(fmt::format("{}: model {:.2f} vs published {:.2f} {} ({:+.1f}%, {}); {}", r.figure.metric, r.model,
                              r.figure.value, unit, r.deviation_pct, verdict, r.figure.source));
    out.push_back(fmt::format("  model: {}", r.detail));
    if (!r.within_tolerance() && r.figure.deviation_stated) out.push_back(fmt::format("  why: {}", r.figure.why));
  }
  return out;
}

}  // namespace flopwatt::npu
