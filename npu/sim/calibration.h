// How far each device variant's model is from the published figures its file
// names ("published" in npu/sim/devices/*.json), for `flopwatt npu plan` and
// the calibration test: a figure is met within 15%, or the file states the
// deviation and the modelling reason for it.
#pragma once
#include <string>
#include <vector>

#include "npu/plan/device.h"

namespace flopwatt::npu {

inline constexpr double kCalibrationTolerancePct = 15.0;

struct CalibrationRow {
  PublishedFigure figure;
  double model = 0;          // the model's figure in the published unit
  double deviation_pct = 0;  // (model / published - 1) * 100
  // best_bf16_gemm_tflops only: the same plan's TFLOP/s on device time alone,
  // and end to end with the host copies the simulated backend performs (fp32
  // operands converted and copied in, C copied out, at the file's host rate).
  double device_only = 0, end_to_end = 0;
  std::string detail;        // what the model figure is made of

  bool within_tolerance() const { return deviation_pct >= -kCalibrationTolerancePct && deviation_pct <= kCalibrationTolerancePct; }
  // Met within 15%, or off by what the file says (to 1 percentage point).
  bool accounted_for() const {
    if (figure.deviation_stated) return deviation_pct - figure.deviation_pct <= 1.0 && figure.deviation_pct - deviation_pct <= 1.0;
    return within_tolerance();
  }
};

std::vector<CalibrationRow> calibrate(const DeviceDesc& dev);
// One line per figure (and one for its reason when off), for text reports.
std::vector<std::string> describe_calibration(const DeviceDesc& dev, const std::vector<CalibrationRow>& rows);

}  // namespace flopwatt::npu
