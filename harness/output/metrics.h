// One table of the measurement metrics: each metric has one name, used as the
// column of measurements.csv and of the report and comparison CSVs, and as
// the path of its key in every JSON output (a '/' in the name nests one
// object: "time/median_s" is {"time": {"median_s": ...}}). The unit and the
// console heading sit beside it, so a metric is spelled once everywhere (as
// workloads/gpt2/tensor_table.h does for tensors).
#pragma once
#include <string_view>

#include <nlohmann/json.hpp>

namespace flopwatt {

struct Metric {
  std::string_view name;     // JSON path and CSV column
  std::string_view unit;     // "" for a count or a ratio
  std::string_view heading;  // console column heading
};

namespace metric {
inline constexpr Metric kTimeMedian{"time/median_s", "s", "median"};
inline constexpr Metric kTimeP10{"time/p10_s", "s", "p10"};
inline constexpr Metric kTimeP90{"time/p90_s", "s", "p90"};
inline constexpr Metric kTimeCi95Lo{"time/ci95_lo_s", "s", "ci95 lo"};
inline constexpr Metric kTimeCi95Hi{"time/ci95_hi_s", "s", "ci95 hi"};
inline constexpr Metric kTimeTotal{"time/total_s", "s", "total"};
inline constexpr Metric kTimeMean{"time/mean_s", "s", "mean"};
inline constexpr Metric kTimeMin{"time/min_s", "s", "min"};
inline constexpr Metric kTimeMax{"time/max_s", "s", "max"};
inline constexpr Metric kFlop{"flop", "FLOP", "FLOP"};
inline constexpr Metric kBytes{"bytes", "B", "bytes"};
inline constexpr Metric kFlopPerS{"flop_per_s", "FLOP/s", "FLOP/s"};  // at the median repetition
// Over the whole window, the basis of every FLOP/J: total FLOPs of the timed
// repetitions / their total time (figures_basis in run.json says why).
inline constexpr Metric kFlopPerSWindow{"flop_per_s_window", "FLOP/s", "FLOP/s win"};
// The slowest repetition over the median; "stalled" when above kStallRatio.
inline constexpr Metric kRepMaxOverMedian{"rep_max_over_median", "", "max/med"};
inline constexpr Metric kStalled{"stalled", "", "stalled"};
inline constexpr Metric kFractionOfPeak{"fraction_of_peak", "", "%peak"};
inline constexpr Metric kIntensity{"intensity_flop_per_byte", "FLOP/B", "FLOP/B"};
inline constexpr Metric kRoof{"roof_flop_per_s", "FLOP/s", "roof"};
inline constexpr Metric kFractionOfRoof{"fraction_of_roof", "", "%roof"};
inline constexpr Metric kRoofBound{"roof_bound", "", "bound"};
inline constexpr Metric kMemoryPattern{"memory_pattern", "", "pattern"};
inline constexpr Metric kWorkingSet{"working_set_bytes", "B", "working set"};
inline constexpr Metric kRoofCeiling{"roof_ceiling", "", "ceiling"};
inline constexpr Metric kRoofTime{"roof_time_s", "s", "roof time"};
// DRAM bytes per repetition counted by the memory controllers (system-wide),
// and which bytes the intensity is over: "measured" or "analytic".
inline constexpr Metric kDramBytesMeasured{"dram_bytes_measured", "B", "DRAM B"};
inline constexpr Metric kIntensityBasis{"intensity_basis", "", "basis"};
inline constexpr Metric kVerifyRelErr{"verify_rel_err", "", "rel err"};
inline constexpr Metric kLoss{"loss", "", "loss"};
inline constexpr Metric kCopyIn{"breakdown/copy_in_s", "s", "copy in"};
inline constexpr Metric kCompute{"breakdown/compute_s", "s", "compute"};
inline constexpr Metric kCopyOut{"breakdown/copy_out_s", "s", "copy out"};
inline constexpr Metric kSubmit{"breakdown/submit_s", "s", "submit"};
inline constexpr Metric kReconfigure{"breakdown/reconfigure_s", "s", "reconfigure"};
// Per energy source (below "energy/<source id>/").
inline constexpr Metric kEnergyJ{"j", "J", "J"};
inline constexpr Metric kAvgPowerW{"avg_power_w", "W", "W"};
inline constexpr Metric kNetJ{"net_j", "J", "net J"};
inline constexpr Metric kFlopPerJ{"flop_per_j", "FLOP/J", "FLOP/J"};
inline constexpr Metric kFlopPerJNet{"flop_per_j_net", "FLOP/J", "net FLOP/J"};
// Per hardware counter: "counters/<libpfm4 event string>", a count.
inline constexpr Metric kCounters{"counters", "", ""};
}  // namespace metric

// A window is flagged "stalled" when one repetition took more than this many
// times the median: its FLOP/J (over the window) then disagrees with the
// median FLOP/s by more than the spread of ordinary repetitions.
inline constexpr double kStallRatio = 2.0;

// The time statistics in the order measurements.csv lists them.
inline constexpr const Metric* kTimeColumns[] = {&metric::kTimeMedian, &metric::kTimeP10, &metric::kTimeP90,
                                                 &metric::kTimeCi95Lo, &metric::kTimeCi95Hi, &metric::kTimeTotal};
// The roofline columns, after fraction_of_peak.
inline constexpr const Metric* kRoofColumns[] = {&metric::kIntensity, &metric::kRoof, &metric::kFractionOfRoof,
                                                 &metric::kRoofBound, &metric::kMemoryPattern,
                                                 &metric::kWorkingSet, &metric::kRoofCeiling,
                                                 &metric::kRoofTime, &metric::kDramBytesMeasured,
                                                 &metric::kIntensityBasis};
inline constexpr const Metric* kBreakdownColumns[] = {&metric::kCopyIn, &metric::kCompute, &metric::kCopyOut,
                                                      &metric::kSubmit, &metric::kReconfigure};
inline constexpr const Metric* kEnergyColumns[] = {&metric::kEnergyJ, &metric::kAvgPowerW, &metric::kNetJ,
                                                   &metric::kFlopPerJ, &metric::kFlopPerJNet};

// j[path] with the path's '/' nesting objects: set creates them, get returns
// nullptr when a level is missing.
void json_set(nlohmann::json& j, std::string_view path, nlohmann::json value);
const nlohmann::json* json_get(const nlohmann::json& j, std::string_view path);

}  // namespace flopwatt
