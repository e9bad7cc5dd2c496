// End-to-end checks of `flopwatt npu ...` through the built binary: exit
// codes of the CLI contract (0 ok, 2 bad input) and the key facts printed.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace {

struct Result {
  int status = -1;
  std::string out;
};

Result run(const std::string& args) {
  Result r;
  const std::string cmd = std::string(FLOPWATT_BINARY) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), int(buf.size()), p)) r.out += buf.data();
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

class NpuCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(FLOPWATT_BINARY)) GTEST_SKIP() << FLOPWATT_BINARY << " not built";
  }
};

const std::string kFixtures = std::string(FLOPWATT_TEST_FIXTURES) + "/npu";

TEST_F(NpuCli, InfoWithoutDeviceExitsZeroAndSaysWhy) {
  const auto r = run("npu info --sysfs-root " + kFixtures + "/root-empty");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("no amdxdna device"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("phoenix"), std::string::npos) << "lists the simulated devices\n" << r.out;
  const auto u = run("npu info --sysfs-root " + kFixtures + "/root-npu-unbound");
  EXPECT_EQ(u.status, 0);
  EXPECT_NE(u.out.find("no driver bound"), std::string::npos) << u.out;
}

// A RyzenAI DPU overlay given to npu info is read and said not to run, with why.
TEST_F(NpuCli, InfoSaysWhatAnXclbinIsAndWhyItDoesNotRun) {
  const std::string x = kFixtures + "/xclbins/AMD_AIE2P_4x4_Overlay_CFG0.xclbin";
  const auto r = run("npu info --sysfs-root " + kFixtures + "/root-empty --xclbin " + x);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find(x + ": DPU overlay (32 kernels with instruct/nistruct arguments; 32 compute units, 31 PDIs); "
                           "not runnable: "),
            std::string::npos)
      << r.out;
}

// Issue 24 item 4: the plan says how far the variant's model is from the
// published figures, why when it is off, and the end-to-end figure with host copies.
TEST_F(NpuCli, PlanReportsCalibrationOfTheVariant) {
  const auto r = run("npu plan 4096,4096,4096 --device phoenix-7840u --host-gbs device");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("calibration of phoenix-7840u"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rated_int8_tops: model 10.49 vs published 10.00"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-33.3%, NOT within 15% (file states -33.3%)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("why: clock"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("end to end with fp32 host copies"), std::string::npos) << r.out;
  const auto j = run("npu plan 4096,4096,4096 --device strix --host-gbs device --json");
  EXPECT_EQ(j.status, 0) << j.out;
  EXPECT_NE(j.out.find("\"deviation_pct\""), std::string::npos) << j.out;
}

TEST_F(NpuCli, FusedBackwardRunsKim2023Workloads) {
  const auto r = run("npu fused-backward --workloads kim2023");
  EXPECT_EQ(r.status, 0) << r.out;
  for (const char* w : {"BERT-tiny", "BERT-large", "T5-small", "T5-large", "NCF", "DLRM", "+15%", "+29%", "mean"})
    EXPECT_NE(r.out.find(w), std::string::npos) << w << "\n" << r.out;
  const auto j = run("npu fused-backward --workloads kim2023 --device kim2023-small --json");
  EXPECT_EQ(j.status, 0) << j.out;
  EXPECT_NE(j.out.find("\"training_speedup\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"published_mean_speedup\": 1.29"), std::string::npos) << j.out;
  const auto bad = run("npu fused-backward --workloads mlperf");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("--workloads kim2023"), std::string::npos) << bad.out;
}

TEST_F(NpuCli, SelftestWithoutDeviceSaysWhatIsMissingAndExitsTwo) {
  const auto r = run("npu selftest --sysfs-root " + kFixtures + "/root-empty");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("discover"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no amdxdna device"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fix:"), std::string::npos) << r.out;
  const auto u = run("npu selftest --sysfs-root " + kFixtures + "/root-npu-unbound");
  EXPECT_EQ(u.status, 2) << u.out;
  EXPECT_NE(u.out.find("no driver bound"), std::string::npos) << u.out;
}

TEST_F(NpuCli, PlanPrintsTheTilingAndCost) {
  const auto r = run("npu plan 7,65,257 --device strix --host-gbs device");
  EXPECT_EQ(r.status, 0) << r.out;
  for (const char* needle : {"core tile", "ddr->l2", "copy_in", "npu-model:strix"})
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
  EXPECT_EQ(run("npu plan 256,768,768 --json --host-gbs device").status, 0);
}

TEST_F(NpuCli, BadInputExitsTwo) {
  EXPECT_EQ(run("npu plan 0,1,1").status, 2);
  EXPECT_EQ(run("npu plan 256,768,768 --device nosuchdevice").status, 2);
  EXPECT_EQ(run("npu plan 256,768,768 --tile 64,64,64 --host-gbs device").status, 2) << "64^3 fp32 output exceeds L1";
  EXPECT_EQ(run("npu sweep --shapes random:0").status, 2);
  EXPECT_EQ(run("npu sweep --shapes random:").status, 2);
  EXPECT_EQ(run("npu sweep --shapes random:5x").status, 2);
  EXPECT_EQ(run("npu sweep --shapes random:5:seven").status, 2);
  EXPECT_EQ(run("npu sweep --shapes random:5:99999999999").status, 2);
  EXPECT_EQ(run("npu sweep --host-gbs fast").status, 2);
}

TEST_F(NpuCli, SmallSweepTimingOnly) {
  const std::string out = std::filesystem::temp_directory_path() / "flopwatt-npu-sweep.json";
  const auto r = run("npu sweep --device phoenix --shapes random:20:7 --host-gbs device --timing-only --out " + out);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("xfer%"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(out));
  std::filesystem::remove(out);
  const auto g = run("npu sweep --device strix --host-gbs device");
  EXPECT_EQ(g.status, 0) << g.out;
  EXPECT_NE(g.out.find("one design for all shapes"), std::string::npos) << g.out;
}

TEST_F(NpuCli, FusedBackwardTablesAreLabelledSimulated) {
  const auto r = run("npu fused-backward --device kim2023-small --seq 128");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("[simulated"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Kim, Na, Lee, Lee and Huh"), std::string::npos) << r.out;
  for (const char* layer : {"qkv", "attproj", "fc ", "fcproj", "lm_head", "backward pass", "training step"})
    EXPECT_NE(r.out.find(layer), std::string::npos) << layer << "\n" << r.out;
  EXPECT_NE(r.out.find("512x2304x768"), std::string::npos) << "batch 4 from the device file x seq 128\n" << r.out;
  const auto j = run("npu fused-backward --device xdna:phoenix --json --batch 1 --seq 64");
  EXPECT_EQ(j.status, 0) << j.out;
  EXPECT_NE(j.out.find("\"simulated\": true"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"psum_write\""), std::string::npos) << j.out;
  EXPECT_EQ(run("npu fused-backward --device no-such-npu").status, 2);
  EXPECT_EQ(run("npu fused-backward --seq 0").status, 2);
}

}  // namespace
