// MeterOptions::pushgateway: a Meter's windows pushed to Debian's
// prometheus-pushgateway, started here as an unprivileged user on loopback
// and stopped here; and to a gateway that never answers, which must cost the
// windows' callers nothing and the destructor a bounded time. The meter's
// power is an external log at a constant 20 W, so no writer runs beside it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "flopwatt/meter.h"
#include "tests/api/meter_support.h"
#include "tests/harness/cli_support.h"
#include "tests/harness/net_support.h"

namespace fs = std::filesystem;
using flopwatt::testing::ServerProcess;

namespace {

constexpr double kWatts = 20.0;

const fs::path kPromBin = [] {
  const char* d = std::getenv("FLOPWATT_PROMETHEUS_BINDIR");
  return fs::path(d && *d ? d : "/usr/bin");
}();

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

flopwatt::MeterOptions at_20_watts(const fs::path& dir) { return flopwatt::testing::at_constant_watts(dir, kWatts); }

// The value of the sample of `name` whose labels include every one of
// `labels`, from the text format; NaN when there is none.
double sample(const std::string& text, const std::string& name, const std::map<std::string, std::string>& labels) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + "{", 0) != 0) continue;
    const std::size_t close = line.rfind('}');
    bool all = close != std::string::npos;
    for (const auto& [k, v] : labels) all = all && line.find(k + "=\"" + v + "\"") < close;
    if (all) return std::stod(line.substr(close + 1));
  }
  return std::nan("");
}

}  // namespace

TEST(MeterPush, EachWindowArrivesAtARealPushgatewayOnce) {
  const fs::path gateway_bin = kPromBin / "prometheus-pushgateway";
  if (!fs::exists(gateway_bin)) {
    const std::string why = gateway_bin.string() + " not found (install the Debian package prometheus-pushgateway, "
                                                   "listed in scripts/packages.txt)";
    if (in_ci()) FAIL() << why << " (CI=true: a skipped server test fails)";
    GTEST_SKIP() << why;
  }
  const fs::path dir = flopwatt::testing::temp_dir("api", "meter_push");
  const int port = flopwatt::testing::free_loopback_port();
  std::vector<std::string> argv = flopwatt::testing::as_nobody();
  argv.insert(argv.end(), {gateway_bin.string(), "--web.listen-address=127.0.0.1:" + std::to_string(port)});
  ServerProcess gateway(argv, dir / "gateway.log");
  ASSERT_TRUE(flopwatt::testing::wait_until_ready(port, "/-/ready", 20)) << flopwatt::testing::slurp(dir / "gateway.log");

  double step_j = 0;
  {
    flopwatt::MeterOptions o = at_20_watts(dir);
    o.pushgateway = "http://127.0.0.1:" + std::to_string(port);
    o.machine = "lab 3";  // a space: the grouping key is base64, so any value names one group
    o.run_id = "meter-push-test";
    flopwatt::Meter m(o);
    EXPECT_EQ(m.run_id(), "meter-push-test");
    for (int i = 0; i < 3; ++i) {
      auto w = m.begin("step");
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      const auto r = m.end(w, 1e9);
      ASSERT_TRUE(r.energy_j) << r.headline_why;
      ASSERT_EQ(r.headline, "external:meter");
      step_j += *r.energy_j;
    }
    const auto eval = m.begin("eval");
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    const auto closed = m.close(eval, 5e8);
    ASSERT_TRUE(m.result(closed).energy_j);
    m.result(closed);  // judged twice, pushed once
  }  // the destructor's push carries every window

  int status = 0;
  const std::string text = flopwatt::testing::loopback_get(port, "/metrics", &status);
  ASSERT_EQ(status, 200);
  const std::map<std::string, std::string> group = {{"job", "flopwatt"}, {"machine", "lab 3"}, {"run_id", "meter-push-test"}};
  auto with = [&](std::map<std::string, std::string> more) {
    more.insert(group.begin(), group.end());
    return more;
  };
  EXPECT_EQ(sample(text, "flopwatt_meter_window_duration_seconds_count", with({{"window", "step"}})), 3) << text;
  EXPECT_EQ(sample(text, "flopwatt_meter_window_duration_seconds_count", with({{"window", "eval"}})), 1) << text;
  const auto step_source = with({{"window", "step"}, {"source", "external:meter"}});
  EXPECT_EQ(sample(text, "flopwatt_meter_window_energy_joules_count", step_source), 3) << text;
  // The pushed sum is the windows' own judged figures, not a second judgement.
  EXPECT_NEAR(sample(text, "flopwatt_meter_window_energy_joules_sum", step_source), step_j, 1e-9 * step_j) << text;
  EXPECT_EQ(sample(text, "flopwatt_meter_window_flop_total", step_source), 3e9) << text;
  EXPECT_EQ(sample(text, "flopwatt_meter_window_flop_total", with({{"window", "eval"}, {"source", "external:meter"}})), 5e8)
      << text;
  // Every window of 0.15 s or more and under 1 s falls in the le="1" bucket.
  EXPECT_EQ(sample(text, "flopwatt_meter_window_duration_seconds_bucket", with({{"window", "step"}, {"le", "1"}})), 3) << text;
  EXPECT_EQ(sample(text, "flopwatt_meter_window_duration_seconds_bucket", with({{"window", "step"}, {"le", "0.1"}})), 0) << text;
  fs::remove_all(dir);
}

TEST(MeterPush, AGatewayThatNeverAnswersCostsTheWindowsNothingAndTheDestructorBoundedTime) {
  flopwatt::testing::SilentServer gateway;
  ASSERT_GT(gateway.port(), 0);
  const fs::path dir = flopwatt::testing::temp_dir("api", "meter_push_silent");
  flopwatt::MeterOptions o = at_20_watts(dir);
  o.pushgateway = "http://127.0.0.1:" + std::to_string(gateway.port());
  o.push_timeout_s = 2.0;
  ::testing::internal::CaptureStderr();
  std::chrono::duration<double> slowest_end{0};
  std::optional<flopwatt::Meter> m;
  m.emplace(o);
  for (int i = 0; i < 3; ++i) {
    auto w = m->begin("step");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto t0 = std::chrono::steady_clock::now();
    m->end(w, 1e9);
    slowest_end = std::max<std::chrono::duration<double>>(slowest_end, std::chrono::steady_clock::now() - t0);
  }
  const auto t0 = std::chrono::steady_clock::now();
  m.reset();
  const std::chrono::duration<double> destructor = std::chrono::steady_clock::now() - t0;
  const std::string err = ::testing::internal::GetCapturedStderr();
  // end() waits for the samples past the window, never for the network: a
  // push that waited would take the 2 s timeout.
  EXPECT_LT(slowest_end.count(), 1.0);
  // The push in flight, then one last with the windows that came meanwhile: two timeouts at most.
  EXPECT_LT(destructor.count(), 2 * o.push_timeout_s + 1.5);
  const std::string warning = "warning: flopwatt::Meter windows not pushed to " + o.pushgateway;
  ASSERT_NE(err.find(warning), std::string::npos) << err;
  EXPECT_EQ(err.find(warning, err.find(warning) + 1), std::string::npos) << "one warning while pushes keep failing:\n" << err;
  EXPECT_NE(err.find("within 2 s"), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(MeterPush, ABadGatewayIsOneLineNamingTheOptionOrTheVariable) {
  const fs::path dir = flopwatt::testing::temp_dir("api", "meter_push_bad");
  flopwatt::MeterOptions o = at_20_watts(dir);
  o.pushgateway = "gateway:9091";
  try {
    flopwatt::Meter m(o);
    ADD_FAILURE() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("MeterOptions::pushgateway gateway:9091: not an http:// or https:// URL", 0), 0u)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("fix: "), std::string::npos) << e.what();
  }
  o.pushgateway.clear();
  ::setenv("FLOPWATT_PUSHGATEWAY", "gw", 1);
  try {
    flopwatt::Meter m(o);
    ADD_FAILURE() << "a bad FLOPWATT_PUSHGATEWAY accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("FLOPWATT_PUSHGATEWAY gw: ", 0), 0u) << e.what();
  }
  ::unsetenv("FLOPWATT_PUSHGATEWAY");
  flopwatt::Meter m(o);
  EXPECT_FALSE(m.run_id().empty());  // made for it, as a run's
  fs::remove_all(dir);
}
