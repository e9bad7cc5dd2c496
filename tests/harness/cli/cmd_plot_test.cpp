// `flopwatt plot`: every figure of the fixture campaign (tests/fixtures/runs)
// is rendered, and each file is a valid image of the documented size.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "tests/harness/cli_support.h"

namespace {

namespace fs = std::filesystem;

const fs::path kCampaign = fs::path(FLOPWATT_TEST_FIXTURES) / "runs" / "campaign-gemm-smoke";

using Result = flopwatt::testing::CommandResult;
using flopwatt::testing::slurp;
fs::path temp_dir(const std::string& tag) { return flopwatt::testing::temp_dir("plot", tag); }
Result run(const std::string& cmdline) { return flopwatt::testing::run_command_line(cmdline); }

bool have_matplotlib() { return std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") == 0; }

std::uint32_t be32(const std::string& s, std::size_t at) {
  return (std::uint32_t(std::uint8_t(s[at])) << 24) | (std::uint32_t(std::uint8_t(s[at + 1])) << 16) |
         (std::uint32_t(std::uint8_t(s[at + 2])) << 8) | std::uint32_t(std::uint8_t(s[at + 3]));
}

// PNG: the 8-byte signature, then the IHDR chunk with width and height.
void expect_png(const fs::path& p, std::uint32_t w, std::uint32_t h) {
  SCOPED_TRACE(p.string());
  const std::string s = slurp(p);
  ASSERT_GT(s.size(), 33u);
  EXPECT_EQ(s.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(s.substr(12, 4), "IHDR");
  EXPECT_EQ(be32(s, 16), w);
  EXPECT_EQ(be32(s, 20), h);
  EXPECT_EQ(s.substr(s.size() - 8, 4), "IEND");
}

// SVG: parses as XML, the root is <svg>, and its size is the figure's in points (72 per inch at 100 px per inch).
void expect_svg(const fs::path& p, int w_px, int h_px) {
  SCOPED_TRACE(p.string());
  const std::string check =
      "/usr/bin/python3 -c \"import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
      "ok = r.tag == '{http://www.w3.org/2000/svg}svg' and float(r.get('width').rstrip('pt')) == " +
      std::to_string(w_px * 72 / 100) + " and float(r.get('height').rstrip('pt')) == " +
      std::to_string(h_px * 72 / 100) + "; sys.exit(0 if ok else 1)\" " + p.string();
  EXPECT_EQ(std::system(check.c_str()), 0) << "not an SVG of the expected size";
}

TEST(PlotCli, RendersEveryFigureOfTheFixtureCampaign) {
  if (!have_matplotlib()) GTEST_SKIP() << "/usr/bin/python3 has no matplotlib (apt-get install python3-matplotlib)";
  ASSERT_TRUE(fs::exists(kCampaign / "campaign.json")) << "fixture missing: tests/fixtures/runs/generate.py";
  const fs::path out = temp_dir("campaign");
  Result r = run(std::string(FLOPWATT_BINARY) + " plot " + kCampaign.string() + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::map<std::string, std::pair<int, int>> sizes = {{"mains_vs_battery", {1000, 700}},
                                                            {"power_trace", {1000, 500}},
                                                            {"throughput", {1000, 500}},
                                                            {"efficiency", {1000, 500}}};
  std::vector<fs::path> expected = {out / "mains_vs_battery"};
  for (const char* state : {"mains", "battery"})
    for (const char* kind : {"power_trace", "throughput", "efficiency"}) expected.push_back(out / state / kind);
  for (const auto& base : expected) {
    const auto [w, h] = sizes.at(base.filename().string());
    expect_png(base.string() + ".png", w, h);
    expect_svg(base.string() + ".svg", w, h);
  }
  fs::remove_all(out);
}

TEST(PlotCli, RunWithoutPowerSamplesGetsThroughputOnly) {
  if (!have_matplotlib()) GTEST_SKIP() << "/usr/bin/python3 has no matplotlib (apt-get install python3-matplotlib)";
  const fs::path d = temp_dir("nopower");
  Result g = run(std::string(FLOPWATT_BINARY) + " run gemm --backend cpu:llmc --shapes '7,5,3;65,1,257' --min-time 0 "
                 "--min-reps 3 --idle 0 --no-peak --power none --out " + (d / "run").string());
  ASSERT_EQ(g.code, 0) << g.err;
  Result r = run(std::string(FLOPWATT_BINARY) + " plot " + (d / "run").string() + " --formats png");
  ASSERT_EQ(r.code, 0) << r.err;
  expect_png(d / "run" / "plots" / "throughput.png", 1000, 500);
  EXPECT_FALSE(fs::exists(d / "run" / "plots" / "throughput.svg"));
  EXPECT_FALSE(fs::exists(d / "run" / "plots" / "power_trace.png"));
  EXPECT_NE(r.out.find("no power samples"), std::string::npos) << r.out;
  fs::remove_all(d);
}

// `run gpt2 --grad-order` runs side by side in one folder: each run's own
// figures under plots/<run>/, the comparison and, from the simulator run,
// the NPU model's figure at the top.
TEST(PlotCli, GradOrderRunsGetTheComparison) {
  if (!have_matplotlib()) GTEST_SKIP() << "/usr/bin/python3 has no matplotlib (apt-get install python3-matplotlib)";
  const fs::path d = temp_dir("gradorder");
  for (const std::string spec : {"standard cpu:llmc", "interleaved cpu:llmc", "auto npu:sim-phoenix"}) {
    const std::string order = spec.substr(0, spec.find(' ')), backend = spec.substr(spec.find(' ') + 1);
    Result g = run(std::string(FLOPWATT_BINARY) + " run gpt2 --model tiny --batch 2 --seq 16 --steps 2 --idle 0 "
                   "--power none --gemm-backend " + backend + " --grad-order " + order + " --out " + (d / order).string());
    ASSERT_EQ(g.code, 0) << g.err;
  }
  Result r = run(std::string(FLOPWATT_BINARY) + " plot " + d.string() + " --formats png");
  ASSERT_EQ(r.code, 0) << r.err;
  expect_png(d / "plots" / "grad_order.png", 1000, 700);
  expect_png(d / "plots" / "grad_order_npu_model.png", 1000, 600);
  expect_png(d / "plots" / "standard" / "throughput.png", 1000, 500);
  // A single run without a simulator has the comparison but no model figure.
  Result one = run(std::string(FLOPWATT_BINARY) + " plot " + (d / "interleaved").string() + " --formats png");
  ASSERT_EQ(one.code, 0) << one.err;
  expect_png(d / "interleaved" / "plots" / "grad_order.png", 1000, 700);
  EXPECT_FALSE(fs::exists(d / "interleaved" / "plots" / "grad_order_npu_model.png"));
  fs::remove_all(d);
}

TEST(PlotCli, BadInputIsOneLineAndExitTwo) {
  const fs::path d = temp_dir("bad");
  for (const std::string& args : {"plot " + (d / "nope").string(), "plot " + d.string(),
                                  "plot " + kCampaign.string() + " --out " + (d / "o").string() + " --formats gif"}) {
    Result r = run(std::string(FLOPWATT_BINARY) + " " + args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
  }
  // FLOPWATT_SCRIPTS overrides where plot.py is looked for.
  Result r = run("FLOPWATT_SCRIPTS=" + d.string() + " " + FLOPWATT_BINARY + " plot " + kCampaign.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("plot script not found"), std::string::npos) << r.err;
  fs::remove_all(d);
}

}  // namespace
