#include "npu/xdna/xclbin_survey.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/npu/npu_test_support.h"
#include "tests/npu/xdna/artifact_builders.h"

namespace flopwatt::npu::xdna {
namespace {

void put_xclbin(const npu::test::TempDir& t, const std::string& name, const test::XclbinSpec& s) {
  const auto x = test::build_xclbin(s);
  t.write(name, std::string(x.begin(), x.end()));
}

const XclbinListing* find(const std::vector<XclbinListing>& v, const std::string& file) {
  for (const auto& l : v)
    if (l.path.size() >= file.size() && l.path.compare(l.path.size() - file.size(), file.size(), file) == 0) return &l;
  return nullptr;
}

// Every xclbin of the directory is listed, none refused: the manifest's GEMM
// design runs, an mlir-aie design the manifest does not name and a DPU
// overlay do not, each saying why; a broken file says it is unreadable.
TEST(XclbinSurvey, ListsEveryXclbinWithWhatItIsAndWhy) {
  npu::test::TempDir t;
  put_xclbin(t, "gemm.xclbin", {});
  put_xclbin(t, "passthrough.xclbin", {});
  test::XclbinSpec overlay;
  overlay.overlay_args = true;
  overlay.cu_name = "DPU_PDI_0:IPUV1CNN";
  put_xclbin(t, "overlay.xclbin", overlay);
  t.write("broken.xclbin", "not an xclbin");
  const auto w = test::build_txn(2, 3);
  t.write("insts.bin", std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4));
  const nlohmann::json d = {{"name", "g256"}, {"device", "npu1"}, {"xclbin", "gemm.xclbin"}, {"insts", "insts.bin"},
                            {"M", 256}, {"N", 256}, {"K", 256}, {"tile", {{"m", 64}, {"k", 32}, {"n", 64}}},
                            {"array", {{"rows", 4}, {"cols", 4}}}, {"dtype_in", "bf16"}, {"dtype_out", "fp32"}};
  t.write("manifest.json", nlohmann::json{{"schema", "flopwatt-npu-artifacts/1"}, {"designs", {d}}}.dump());

  const auto v = survey_xclbins(t.path(), {});
  ASSERT_EQ(v.size(), 4u);
  const auto* gemm = find(v, "/gemm.xclbin");
  ASSERT_NE(gemm, nullptr);
  EXPECT_TRUE(gemm->runnable);
  EXPECT_EQ(gemm->design, "g256");
  const auto* other = find(v, "/passthrough.xclbin");
  ASSERT_NE(other, nullptr);
  EXPECT_FALSE(other->runnable);
  EXPECT_NE(other->what.find("mlir-aie design"), std::string::npos) << other->what;
  EXPECT_NE(other->why.find("no design in manifest.json names it"), std::string::npos) << other->why;
  const auto* ov = find(v, "/overlay.xclbin");
  ASSERT_NE(ov, nullptr);
  EXPECT_FALSE(ov->runnable);
  EXPECT_NE(ov->what.find("DPU overlay"), std::string::npos) << ov->what;
  EXPECT_EQ(ov->compute_units, 1u);
  const auto* broken = find(v, "/broken.xclbin");
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->what, "unreadable xclbin");
  EXPECT_FALSE(broken->why.empty());
}

TEST(XclbinSurvey, WithoutAManifestNothingRunsAndExtraFilesAreListedOnce) {
  npu::test::TempDir t;
  put_xclbin(t, "gemm.xclbin", {});
  const auto v = survey_xclbins(t.path(), {t.path() + "/gemm.xclbin", t.path() + "/missing.xclbin"});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_FALSE(v[0].runnable);
  EXPECT_NE(v[0].why.find("no usable manifest.json"), std::string::npos) << v[0].why;
  EXPECT_EQ(v[1].what, "unreadable xclbin");
}

}  // namespace
}  // namespace flopwatt::npu::xdna
