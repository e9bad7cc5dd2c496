// What every `run` command does around its workload: the header written before
// the first measurement (context with the supply state of the fixture machine,
// the command's extra context), the closing write, the exit status, and a
// second run into the same directory.
#include "harness/run/run_setup.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "workloads/error.h"

namespace flopwatt {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

std::string slurp(std::FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[512];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  return s;
}

class RunSetupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("flopwatt_run_setup_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    o_.out = (dir_ / "run").string();
    o_.power.power = "none";
    o_.power.idle_s = 0;
    o_.power.sysfs_root = std::string(FLOPWATT_TEST_FIXTURES) + "/power/charging-on-mains";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  RunCommonOptions o_;
};

TEST_F(RunSetupTest, TheHeaderIsOnDiskBeforeTheFirstMeasurement) {
  OpenRun r = open_run(o_, {}, {{"gemm", {{"shapes", "square"}}}});
  const auto j = read_json(dir_ / "run" / "run.json");
  EXPECT_FALSE(j["complete"].get<bool>());
  EXPECT_EQ(j["measurements"].size(), 0u);
  EXPECT_EQ(j["run_id"], r.session->run().run_id);
  const auto& c = j["context"];
  EXPECT_EQ(c["gemm"]["shapes"], "square");
  // The fixture laptop: adapter online, BAT0 charging (tests/fixtures/power/charging-on-mains.md).
  EXPECT_EQ(c["ac_online"], true);
  EXPECT_EQ(c["ac_inferred_from_battery_status"], false);
  ASSERT_EQ(c["batteries"].size(), 1u);
  EXPECT_EQ(c["batteries"][0]["name"], "BAT0");
  EXPECT_EQ(c["batteries"][0]["status"], "charging");  // flopwatt's spelling of the kernel's "Charging"
  EXPECT_TRUE(c["temperatures_start"].is_array());
  EXPECT_FALSE(c.contains("headline"));  // --power none: no source, no headline rule
  EXPECT_EQ(r.root, o_.power.sysfs_root);
  close_run(r, true);
}

TEST_F(RunSetupTest, EndRunWritesTheFinalReportAndTheExitStatus) {
  std::FILE* out = std::tmpfile();
  {
    OpenRun r = start_run(o_, {}, {}, out);
    EXPECT_EQ(end_run(r, true, out, RunEnding::kReportPath), 0);
  }
  const std::string text = slurp(out);
  EXPECT_NE(text.find("-> " + o_.out), std::string::npos) << text;
  EXPECT_NE(text.find("report: " + o_.out + "/run.json"), std::string::npos) << text;
  const auto j = read_json(dir_ / "run" / "run.json");
  EXPECT_TRUE(j["complete"].get<bool>());
  EXPECT_TRUE(j["context"]["temperatures_end"].is_array());

  // An interrupted run keeps what it has and says so with 130.
  o_.out = (dir_ / "partial").string();
  OpenRun r = open_run(o_, {}, {});
  EXPECT_EQ(end_run(r, false, out, RunEnding::kReportPath), 130);
  EXPECT_FALSE(read_json(dir_ / "partial" / "run.json")["complete"].get<bool>());
  std::fclose(out);
}

TEST_F(RunSetupTest, ADirectoryHoldingARunIsKeptUnlessOverwriteIsGiven) {
  { OpenRun r = open_run(o_, {}, {}); close_run(r, true); }
  const std::string first = read_json(dir_ / "run" / "run.json")["run_id"];
  EXPECT_THROW(open_run(o_, {}, {}), InputError);
  EXPECT_EQ(read_json(dir_ / "run" / "run.json")["run_id"], first);
  o_.overwrite = true;
  OpenRun r = open_run(o_, {}, {});
  EXPECT_NE(read_json(dir_ / "run" / "run.json")["run_id"], first);
  close_run(r, true);
}

}  // namespace
}  // namespace flopwatt
