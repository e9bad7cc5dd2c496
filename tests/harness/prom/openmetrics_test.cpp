#include "harness/prom/openmetrics.h"

#include <gtest/gtest.h>

#include "harness/prom/families.h"

using namespace flopwatt::prom;

TEST(OpenMetrics, NegotiatedFromPrometheusAcceptHeader) {
  // What Prometheus 2.42 sends (scrape/scrape.go, scrapeAcceptHeader).
  EXPECT_TRUE(wants_openmetrics("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
                                "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
  EXPECT_FALSE(wants_openmetrics(nullptr));
  EXPECT_FALSE(wants_openmetrics("*/*"));  // curl
  EXPECT_FALSE(wants_openmetrics("text/plain;version=0.0.4;q=1,application/openmetrics-text;version=1.0.0;q=0.5"));
  EXPECT_FALSE(wants_openmetrics("application/openmetrics-text;q=0"));
}

TEST(OpenMetrics, CounterFamilyDropsTotalAndInfoIsTyped) {
  auto c = family("x_energy_joules_total", "energy \\ with\nnewline", prometheus::MetricType::Counter);
  add_value(c, {{"source", "a\"b"}}, 12.5);
  auto i = family("x_source_info", "info", prometheus::MetricType::Gauge);
  add_value(i, {{"why", ""}}, 1);
  const std::string om = to_openmetrics({c, i});
  EXPECT_NE(om.find("# TYPE x_energy_joules counter\n# UNIT x_energy_joules joules\n"), std::string::npos) << om;
  EXPECT_NE(om.find("# HELP x_energy_joules energy \\\\ with\\nnewline\n"), std::string::npos) << om;
  EXPECT_NE(om.find("x_energy_joules_total{source=\"a\\\"b\"} 12.5\n"), std::string::npos) << om;
  EXPECT_NE(om.find("# TYPE x_source info\n"), std::string::npos) << om;
  EXPECT_NE(om.find("x_source_info{why=\"\"} 1\n"), std::string::npos) << om;
  EXPECT_EQ(om.substr(om.size() - 6), "# EOF\n");
}
