// The parser against real xclbins (tests/fixtures/npu/xclbins: RyzenAI-SW's
// overlays cut to their metadata), each beside what XRT reads from the
// original file, recorded by make_corpus.py from XRT's rules apart from this
// parser: kernels, compute units in XRT's order, the PDI each one gets.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "npu/xdna/xclbin.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {
namespace {

const std::string kCorpus = std::string(FLOPWATT_TEST_FIXTURES) + "/npu/xclbins";

std::vector<std::string> corpus() {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(kCorpus))
    if (e.path().extension() == ".json") v.push_back(e.path().stem().string());
  std::sort(v.begin(), v.end());
  return v;
}

nlohmann::json record(const std::string& name) {
  std::ifstream in(kCorpus + "/" + name + ".json");
  return nlohmann::json::parse(in);
}

TEST(XclbinCorpus, HoldsTheRealFiles) { EXPECT_EQ(corpus().size(), 6u); }

TEST(XclbinCorpus, ComputeUnitsAndPdisAreXrts) {
  for (const auto& name : corpus()) {
    SCOPED_TRACE(name);
    const auto want = record(name)["xrt"];
    Xclbin x;
    ASSERT_NO_THROW(x = load_xclbin(kCorpus + "/" + name + ".xclbin"));
    ASSERT_EQ(x.metadata_kernels.size(), want["kernels"].size());
    ASSERT_EQ(x.cus.size(), want["cus"].size());
    for (std::size_t i = 0; i < x.cus.size(); ++i) {
      const auto& w = want["cus"][i];
      EXPECT_EQ(x.cus[i].name, w["name"].get<std::string>()) << i;
      EXPECT_EQ(x.cus[i].kernel, w["kernel"].get<std::string>()) << i;
      EXPECT_EQ(x.cus[i].kernel_id, w["kernel_id"].get<std::uint64_t>()) << i;
      EXPECT_EQ(x.cus[i].functional, w["functional"].get<unsigned>()) << i;
      EXPECT_EQ(x.cus[i].pdi, w["pdi"].get<std::size_t>()) << i;
    }
    std::vector<std::string> skipped;
    for (const auto& k : x.skipped_kernels) skipped.push_back(k.name);
    EXPECT_EQ(skipped, want["skipped_kernels"].get<std::vector<std::string>>());
    ASSERT_EQ(x.partition.pdis.size(), want["pdis"].size());
    for (std::size_t p = 0; p < x.partition.pdis.size(); ++p) {
      std::set<std::uint64_t> ids;
      for (const auto& g : x.partition.pdis[p].groups) ids.insert(g.kernel_ids.begin(), g.kernel_ids.end());
      EXPECT_EQ(ids, want["pdis"][p]["kernel_ids"].get<std::set<std::uint64_t>>()) << "pdi " << p;
    }
  }
}

// RyzenAI's overlays are read, judged DPU overlays and refused to run with
// that said, never with a parse error.
TEST(XclbinCorpus, EveryFileIsADpuOverlayFlopwattSaysItCannotRun) {
  for (const auto& name : corpus()) {
    SCOPED_TRACE(name);
    const Xclbin x = load_xclbin(kCorpus + "/" + name + ".xclbin");
    const XclbinVerdict v = judge_xclbin(x);
    EXPECT_FALSE(v.runnable);
    EXPECT_NE(v.what.find("DPU overlay"), std::string::npos) << v.what;
    EXPECT_NO_THROW(cu_pdis(x));
  }
}

// The case issue 39 found: ids 0x1010-0x101e in the XML, 0x10-0x1e in
// IP_LAYOUT's 12-bit field.
TEST(XclbinCorpus, Cfg0KeepsTheWholeKernelIds) {
  const Xclbin x = load_xclbin(kCorpus + "/AMD_AIE2P_4x4_Overlay_CFG0.xclbin");
  const auto at = std::find_if(x.cus.begin(), x.cus.end(), [](const ComputeUnit& c) { return c.name == "DPU_PDI_16:IPUV1CNN"; });
  ASSERT_NE(at, x.cus.end());
  EXPECT_EQ(at->kernel_id, 0x1010u);
  EXPECT_EQ((x.ips.at(17).properties >> 16) & 0xfff, 0x010u) << "IP_LAYOUT holds only the low 12 bits";
}

}  // namespace
}  // namespace flopwatt::npu::xdna
