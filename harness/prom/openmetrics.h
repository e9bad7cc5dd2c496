// The OpenMetrics 1.0.0 text format, which prometheus-cpp 1.0 (Debian 12's)
// does not write: Prometheus asks for it first in its Accept header.
// Families are named as in the Prometheus text format (families.h); here a
// counter's family drops its _total (the sample keeps it) and a gauge named
// *_info is an info family. Written from the OpenMetrics specification
// (github.com/OpenObservability/OpenMetrics, specification/OpenMetrics.md).
#pragma once
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

namespace flopwatt::prom {

inline constexpr const char* kOpenMetricsType = "application/openmetrics-text; version=1.0.0; charset=utf-8";
inline constexpr const char* kTextType = "text/plain; version=0.0.4; charset=utf-8";

std::string to_openmetrics(const std::vector<prometheus::MetricFamily>& families);

// Content negotiation on an Accept header: true when OpenMetrics is
// acceptable and ranked at least as high as the text format (q values;
// text/plain and */* stand for the text format). No header: the text format.
bool wants_openmetrics(const char* accept);

}  // namespace flopwatt::prom
