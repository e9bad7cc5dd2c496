// How a Google Benchmark row names the source of its energy counters, so every
// row says where its joules come from: "energy from <id>", then
// "; low confidence: <why>" where it is low (any note after the id starts
// with "; "); a loop with no energy counters says "no energy counters: <why>".
// flopwatt/benchmark.h's set_counters and flopwatt_bench write it, `flopwatt
// report` and `compare` (harness/analysis) read it back. It lives here, below
// both, so the readers need not include the public API; the public API
// re-exports it as flopwatt/bench_label.h (installed beside flopwatt/meter.h),
// so it depends on the standard library only.
#pragma once
#include <optional>
#include <string>

namespace flopwatt {

inline constexpr const char* kLabelSource = "energy from ";
inline constexpr const char* kLabelLow = "; low confidence: ";

// The source a label of that form names; nullopt for any other label.
inline std::optional<std::string> label_source(const std::string& label) {
  const std::string prefix = kLabelSource;
  if (label.rfind(prefix, 0) != 0) return std::nullopt;
  const std::size_t end = label.find("; ", prefix.size());
  return label.substr(prefix.size(), end == std::string::npos ? std::string::npos : end - prefix.size());
}

}  // namespace flopwatt
