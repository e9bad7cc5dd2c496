// Session: run.json rewritten whole after every measurement (valid at any
// moment), samples.csv appended, and an unusable output directory refused.
#include "harness/run/session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "workloads/error.h"

namespace flopwatt {
namespace {

namespace fs = std::filesystem;

Measurement sample_measurement() {
  Measurement m;
  m.workload = "gemm";
  m.op = "qkv";
  m.backend = "cpu:test";
  m.shape = Shape{256, 2304, 768};
  m.reps = 3;
  m.rep_times_s = {0.1, 0.2, 0.3};
  m.time_s.median = 0.2;
  m.flop = 1e9;
  m.flop_per_s = 5e9;
  return m;
}

TEST(Session, RunJsonIsValidAfterEveryMeasurement) {
  const fs::path dir = fs::temp_directory_path() / ("flopwatt_session_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  {
    flopwatt::Run h;
    h.run_id = "t";
    Session s(h, dir.string());
    for (int i = 0; i < 3; ++i) {
      s.add(sample_measurement());
      std::ifstream f(dir / "run.json");
      const auto j = nlohmann::json::parse(f);
      EXPECT_EQ(j["measurements"].size(), std::size_t(i + 1));
      EXPECT_FALSE(j["complete"].get<bool>());
    }
    s.add_samples({{"battery:BAT0", "W", {{1, 2.5}, {2, 3.5}}}});
    s.finish(true);
  }
  std::ifstream f(dir / "run.json");
  EXPECT_TRUE(nlohmann::json::parse(f)["complete"].get<bool>());
  std::ifstream samples(dir / "samples.csv");
  std::string all((std::istreambuf_iterator<char>(samples)), {});
  EXPECT_EQ(all, "source_id,t_ns,value,unit\nbattery:BAT0,1,2.5,W\nbattery:BAT0,2,3.5,W\n");
  EXPECT_FALSE(fs::exists(dir / "run.json.tmp"));
  fs::remove_all(dir);
}

TEST(Session, UnwritableOutIsAnInputError) {
  EXPECT_THROW(Session(flopwatt::Run{}, "/proc/flopwatt-cannot-exist/x"), InputError);
}

}  // namespace
}  // namespace flopwatt
