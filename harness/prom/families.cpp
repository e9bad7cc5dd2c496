#include "harness/prom/families.h"

#include <prometheus/text_serializer.h>

namespace flopwatt::prom {

prometheus::MetricFamily family(std::string name, std::string help, prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

namespace {

prometheus::ClientMetric with_labels(const Labels& labels) {
  prometheus::ClientMetric m;
  for (const auto& [k, v] : labels) m.label.push_back({k, v});
  return m;
}

}  // namespace

void add_value(prometheus::MetricFamily& f, const Labels& labels, double value) {
  prometheus::ClientMetric m = with_labels(labels);
  switch (f.type) {
    case prometheus::MetricType::Counter: m.counter.value = value; break;
    case prometheus::MetricType::Gauge: m.gauge.value = value; break;
    default: m.untyped.value = value; break;
  }
  f.metric.push_back(std::move(m));
}

void add_histogram(prometheus::MetricFamily& f, const Labels& labels, const std::vector<double>& values,
                   const std::vector<double>& bounds) {
  Histogram h;
  for (double v : values) h.observe(v, bounds);
  add_histogram(f, labels, h, bounds);
}

void add_histogram(prometheus::MetricFamily& f, const Labels& labels, const Histogram& h, const std::vector<double>& bounds) {
  prometheus::ClientMetric m = with_labels(labels);
  for (std::size_t i = 0; i < bounds.size(); ++i)
    m.histogram.bucket.push_back({i < h.cumulative.size() ? h.cumulative[i] : 0, bounds[i]});
  m.histogram.sample_count = h.count;
  m.histogram.sample_sum = h.sum;
  f.metric.push_back(std::move(m));
}

void append_nonempty(std::vector<prometheus::MetricFamily>& out, prometheus::MetricFamily f) {
  if (!f.metric.empty()) out.push_back(std::move(f));
}

std::string to_text(const std::vector<prometheus::MetricFamily>& families) {
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace flopwatt::prom
