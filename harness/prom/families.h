// Building prometheus-cpp's data model (MetricFamily, ClientMetric) by hand:
// the exporter and the push describe values they already hold at collect
// time, so they use prometheus-cpp's model and serializer but none of its
// registry's live Counter or Gauge objects.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

#include "harness/prom/window_tally.h"

namespace flopwatt::prom {

using Labels = std::vector<std::pair<std::string, std::string>>;

// An empty family; `name` as the Prometheus text format writes it (a
// counter's ends in _total, an info metric's in _info and is a gauge of 1).
prometheus::MetricFamily family(std::string name, std::string help, prometheus::MetricType type);
void add_value(prometheus::MetricFamily& f, const Labels& labels, double value);
// A histogram sample of `values` over `bounds` (ascending upper bounds; +Inf is added).
void add_histogram(prometheus::MetricFamily& f, const Labels& labels, const std::vector<double>& values,
                   const std::vector<double>& bounds);
// A histogram sample of counts already tallied over `bounds`.
void add_histogram(prometheus::MetricFamily& f, const Labels& labels, const Histogram& h, const std::vector<double>& bounds);

// Families with no samples are dropped (a TYPE line without samples says nothing).
void append_nonempty(std::vector<prometheus::MetricFamily>& out, prometheus::MetricFamily f);

// The Prometheus text format 0.0.4 (prometheus-cpp's TextSerializer).
std::string to_text(const std::vector<prometheus::MetricFamily>& families);

}  // namespace flopwatt::prom
