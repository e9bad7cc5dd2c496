#include "npu/xdna/artifacts.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/npu/npu_test_support.h"
#include "tests/npu/xdna/artifact_builders.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {
namespace {

nlohmann::json design(const std::string& name, std::int64_t M, std::int64_t N, std::int64_t K, const char* out = "fp32") {
  return {{"name", name}, {"device", "npu1"}, {"xclbin", "gemm.xclbin"}, {"insts", "insts.bin"},
          {"M", M}, {"N", N}, {"K", K}, {"tile", {{"m", 64}, {"k", 32}, {"n", 64}}},
          {"array", {{"rows", 4}, {"cols", 4}}}, {"dtype_in", "bf16"}, {"dtype_out", out}};
}

struct ArtifactDir {
  npu::test::TempDir t;
  ArtifactDir() {
    const auto x = test::build_xclbin({});
    t.write("gemm.xclbin", std::string(x.begin(), x.end()));
    const auto w = test::build_txn(2, 3);
    t.write("insts.bin", std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4));
  }
  void manifest(const nlohmann::json& designs) const {
    t.write("manifest.json", nlohmann::json{{"schema", "flopwatt-npu-artifacts/1"}, {"designs", designs}}.dump());
  }
};

TEST(Artifacts, LoadsValidatesAndPicks) {
  ArtifactDir a;
  a.manifest(nlohmann::json::array(
      {design("big", 512, 1024, 1024), design("small", 256, 768, 768), design("half", 256, 768, 768, "bf16")}));
  const ArtifactSet s = load_artifacts(a.t.path());
  ASSERT_EQ(s.designs.size(), 3u);
  EXPECT_EQ(s.designs[1].xclbin, a.t.path() + "/gemm.xclbin");
  for (const auto& d : s.designs) EXPECT_NO_THROW(validate_design(d));
  GemmDesc g;
  g.M = 200, g.N = 700, g.K = 768;
  ASSERT_NE(pick_design(s, g, "npu1"), nullptr);
  EXPECT_EQ(pick_design(s, g, "npu1")->name, "small");
  g.dtype_out = DType::BF16;
  EXPECT_EQ(pick_design(s, g, "npu1")->name, "half");
  g.dtype_out = DType::F32;
  g.K = 1000;
  EXPECT_EQ(pick_design(s, g, "npu1")->name, "big");
  EXPECT_EQ(pick_design(s, g, "npu4"), nullptr);
  EXPECT_EQ(pick_design(s, g, "")->name, "big");
  g.M = 4096;
  EXPECT_EQ(pick_design(s, g, "npu1"), nullptr);
}

TEST(Artifacts, ManifestErrorsNameTheField) {
  ArtifactDir a;
  auto expect_bad = [&](const nlohmann::json& d, const std::string& needle) {
    a.manifest(nlohmann::json::array({d}));
    try {
      load_artifacts(a.t.path());
      ADD_FAILURE() << "accepted: " << d.dump();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto d = design("x", 256, 768, 768);
  d.erase("xclbin");
  expect_bad(d, "xclbin");
  d = design("x", 256, 768, 768);
  d["insts"] = "absent.bin";
  expect_bad(d, "does not exist");
  d = design("x", 250, 768, 768);
  expect_bad(d, "not a multiple");
  d = design("x", 256, 768, 768);
  d["dtype_in"] = "fp32";
  expect_bad(d, "dtype_in");
  d = design("x", 256, 768, 768);
  d["tile"]["k"] = -32;
  expect_bad(d, "tile.k");
  a.t.write("manifest.json", "{ not json");
  EXPECT_THROW(load_artifacts(a.t.path()), InputError);
  // A non-string schema escaped as a JSON type_error and broke every command that lists backends.
  a.t.write("manifest.json", R"({"schema": 7, "designs": []})");
  EXPECT_THROW(load_artifacts(a.t.path()), InputError);
  npu::test::TempDir empty;
  EXPECT_THROW(load_artifacts(empty.path()), InputError);
}

TEST(Artifacts, CorruptFilesFailValidation) {
  ArtifactDir a;
  a.t.write("gemm.xclbin", "xclbin2\0 but nothing else");
  a.manifest(nlohmann::json::array({design("x", 256, 768, 768)}));
  const ArtifactSet s = load_artifacts(a.t.path());
  EXPECT_THROW(validate_design(s.designs[0]), InputError);
}

// mlir-aie names its outputs MxKxN (then the tile mxkxn); flopwatt speaks
// M,N,K. A manifest that swapped N and K would make a design for a larger C
// write past the end of the buffer. Fails on the code before the check.
TEST(Artifacts, ShapeInMlirAieFileNamesMustMatchTheManifest) {
  ArtifactDir a;
  const auto x = test::build_xclbin({});
  a.t.write("final_256x64x128_8x8x8_4c.xclbin", std::string(x.begin(), x.end()));
  auto d = design("x", 256, 128, 64);
  d["xclbin"] = "final_256x64x128_8x8x8_4c.xclbin";
  d["tile"] = {{"m", 8}, {"k", 8}, {"n", 8}};
  a.manifest(nlohmann::json::array({d}));
  EXPECT_NO_THROW(load_artifacts(a.t.path()));
  d["N"] = 64, d["K"] = 128;
  a.manifest(nlohmann::json::array({d}));
  try {
    load_artifacts(a.t.path());
    ADD_FAILURE() << "a design built for 256x64x128 (MxKxN) accepted as M=256 N=64 K=128";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("MxKxN"), std::string::npos) << m;
    EXPECT_NE(m.find("M=256 N=128 K=64"), std::string::npos) << m;
  }
  d["N"] = 128, d["K"] = 64, d["tile"]["n"] = 16;
  a.manifest(nlohmann::json::array({d}));
  EXPECT_THROW(load_artifacts(a.t.path()), InputError) << "the tile in the name differs too";
}

// The instruction stream's transaction header names the AIE generation it was
// compiled for (aie-rt XAIE_DEV_GEN_AIE2IPU = 3 for npu1, AIE2P = 4 for
// npu4/5/6). Fails on the code before the check.
TEST(Artifacts, InstructionsForAnotherGenerationAreRefused) {
  ArtifactDir a;
  const auto w = test::build_txn(2, 3, 4);
  a.t.write("insts.bin", std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4));
  a.manifest(nlohmann::json::array({design("x", 256, 768, 768)}));
  const ArtifactSet s = load_artifacts(a.t.path());
  try {
    validate_design(s.designs[0]);
    ADD_FAILURE() << "aie2p instructions accepted for npu1";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("npu1"), std::string::npos) << e.what();
  }
  auto d = design("x", 256, 768, 768);
  d["device"] = "npu4";
  a.manifest(nlohmann::json::array({d}));
  EXPECT_NO_THROW(validate_design(load_artifacts(a.t.path()).designs[0]));
}

}  // namespace
}  // namespace flopwatt::npu::xdna
